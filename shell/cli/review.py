"""``reag review``: label abstained criteria in the terminal (or from a file), or with
``--web`` in a browser, and publish them.

Both read ``reag.abstains.v1`` into one queue per app in the SQL store
(``reag.review.queue``) and lease items from it, so an item taken in the
terminal is not offered on the web pages and the other way round; a label is
stored first and the item's one Review goes to ``reag.reviews.v1`` when it
resolves (at once with one reviewer per item).
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
    web: Annotated[
        bool, typer.Option("--web", help="Serve the queue as web pages instead of the terminal.")
    ] = False,
    port: Annotated[int, typer.Option("--port", help="Port of --web.")] = 8765,
    host: Annotated[
        str,
        typer.Option("--host", help="Address of --web; beyond 127.0.0.1 only with --tokens-file."),
    ] = "127.0.0.1",
    tokens_file: Annotated[
        Path | None,
        typer.Option(
            "--tokens-file",
            envvar="REAG_REVIEW_TOKENS_FILE",
            help="'reviewer token' per line: one token per reviewer for --web.",
        ),
    ] = None,
    per_item: Annotated[
        int,
        typer.Option(
            "--reviewers-per-item",
            envvar="REAG_REVIEW_REVIEWERS_PER_ITEM",
            min=1,
            max=2,
            help="1: the first label decides. 2: two must agree; a disagreement goes to a third.",
        ),
    ] = 1,
    tls_certfile: Annotated[
        str | None, typer.Option("--tls-cert", envvar="REAG_REVIEW_TLS_CERTFILE")
    ] = None,
    tls_keyfile: Annotated[
        str | None, typer.Option("--tls-key", envvar="REAG_REVIEW_TLS_KEYFILE")
    ] = None,
) -> None:
    """Show each abstained or audited criterion (response, persona, evidence) blind, publish
    the reviewer's YES/NO to reag.reviews.v1, then show every tier's verdict."""
    from reag.review.labels import Labeler, LabelFileError, ScriptedLabeler, TerminalLabeler
    from reag.review.session import review_loop
    from services.kit.settings import ServiceSettings
    from shell.kafka_io.review import KafkaReviewIO, ReviewBrokerError
    from shell.review_web.io import StoreReviewIO, open_queue

    name = reviewer or getpass.getuser()
    if web:
        _serve_web(
            host=host,
            port=port,
            tokens_file=tokens_file,
            reviewer=name,
            per_item=per_item,
            group=group,
            tls_certfile=tls_certfile,
            tls_keyfile=tls_keyfile,
        )
        return

    labeler: Labeler
    if labels_from is not None:
        try:
            labeler = ScriptedLabeler.from_file(labels_from)
        except LabelFileError as exc:
            raise typer.BadParameter(str(exc), param_hint="--labels-from") from exc
        timeout = timeout if timeout is not None else SCRIPTED_TIMEOUT_S
    else:
        labeler = TerminalLabeler(sys.stdin, sys.stdout)
    settings = ServiceSettings()
    dsn = settings.resolved_store_dsn()
    queue = open_queue(dsn, per_item=per_item)
    for line in day_one_lines(dsn):
        typer.echo(line)

    async def run() -> int:
        async with (
            KafkaReviewIO(settings, group=group) as kafka,
            StoreReviewIO(kafka, queue, name) as shared,
        ):
            stats = await review_loop(
                shared,
                shared,
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


def day_one_lines(dsn: str) -> list[str]:
    """One plain line per app on a provisional threshold: what its audits have settled."""
    from reag.calibration.store import CalibrationStore
    from reag.recalibration.day_one import progress
    from reag.trust.store import AuditStore

    store = CalibrationStore.open(dsn)
    audits = AuditStore(store.sessions)
    apps = sorted({t.app for t in store.latest_thresholds()})
    lines = (progress(store, audits, app) for app in apps)
    return [f"day one: {line}" for line in lines if line is not None]


def _serve_web(
    *,
    host: str,
    port: int,
    tokens_file: Path | None,
    reviewer: str,
    per_item: int,
    group: str,
    tls_certfile: str | None,
    tls_keyfile: str | None,
) -> None:
    from services.kit.settings import ServiceSettings
    from shell.kafka_io.review import ReviewBrokerError
    from shell.review_web.auth import TokenFileError, UnsafeBindError
    from shell.review_web.serve import WebOptions, make_auth, run_web

    options = WebOptions(
        host=host,
        port=port,
        tokens_file=tokens_file,
        reviewer=reviewer,
        per_item=per_item,
        group=group,
        tls_certfile=tls_certfile,
        tls_keyfile=tls_keyfile,
    )
    try:
        make_auth(options)  # fails before anything opens: no tokens beyond localhost
    except (TokenFileError, UnsafeBindError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    scheme = "https" if tls_certfile else "http"
    typer.echo(f"reag review --web on {scheme}://{host}:{port}/ (Ctrl-C stops)")
    try:
        asyncio.run(run_web(ServiceSettings(), options))
    except ReviewBrokerError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    except KeyboardInterrupt:
        pass


def register(app: typer.Typer) -> None:
    app.command("review")(review)
