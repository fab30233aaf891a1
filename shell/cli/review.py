"""``reag review``: label abstained criteria in the terminal (or from a file) and publish them.

Follows ``reag.abstains.v1`` with its own consumer group, so several
reviewers in one group share the work and a restarted session resumes where
the last published label left off.
"""

from __future__ import annotations

import asyncio
import getpass
import sys
from pathlib import Path
from typing import Annotated

import typer

SCRIPTED_TIMEOUT_S = 30.0


def review(
    *,
    reviewer: Annotated[
        str | None,
        typer.Option("--reviewer", help="Name recorded on every label (default: your login)."),
    ] = None,
    labels_from: Annotated[
        Path | None,
        typer.Option(
            "--labels-from",
            help='JSONL of {"criterion_id": ..., "label": "YES"|"NO", "comment": ...}; '
            "no prompts, criteria the file does not name are skipped.",
        ),
    ] = None,
    max_labels: Annotated[
        int | None, typer.Option("--max", min=1, help="Stop after this many labels.")
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            min=0.1,
            help=f"Stop after this many seconds with no new case (default: wait for ever; "
            f"{SCRIPTED_TIMEOUT_S:.0f} with --labels-from).",
        ),
    ] = None,
    group: Annotated[
        str, typer.Option("--group", help="Consumer group; reviewers in one group share cases.")
    ] = "reag-review",
) -> None:
    """Show each abstained or audited criterion (response, persona, evidence) blind, publish
    the reviewer's YES/NO to reag.reviews.v1, then show every tier's verdict."""
    from reag.review.labels import Labeler, LabelFileError, ScriptedLabeler, TerminalLabeler
    from reag.review.session import review_loop
    from services.kit.settings import ServiceSettings
    from shell.kafka_io.review import KafkaReviewIO, ReviewBrokerError

    labeler: Labeler
    if labels_from is not None:
        try:
            labeler = ScriptedLabeler.from_file(labels_from)
        except LabelFileError as exc:
            raise typer.BadParameter(str(exc), param_hint="--labels-from") from exc
        timeout = timeout if timeout is not None else SCRIPTED_TIMEOUT_S
    else:
        labeler = TerminalLabeler(sys.stdin, sys.stdout)
    name = reviewer or getpass.getuser()

    async def run() -> int:
        async with KafkaReviewIO(ServiceSettings(), group=group) as kafka:
            stats = await review_loop(
                kafka,
                kafka,
                labeler,
                sys.stdout,
                reviewer=name,
                max_labels=max_labels,
                idle_timeout_s=timeout,
            )
        return stats.labelled

    try:
        asyncio.run(run())
    except ReviewBrokerError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc


def register(app: typer.Typer) -> None:
    app.command("review")(review)
