"""``reag traffic send FILE``: an app's logged traffic replayed into ``reag.traffic.v1``.

For an app that cannot run the recorder yet, or to start on yesterday's logs:
each row of a JSON-lines or CSV log becomes a live case, redacted under the
app's traffic policy and produced by the same recorder an app would run
(``reag.client``), so the events are keyed, labelled and redacted exactly as
recorded ones. ``--dry-run --json`` shows what would be sent, after redaction,
and why each bad row was refused; a bad row never stops the file.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from reag.traffic.redaction import RedactionPolicy
    from reag.traffic.replay import ReplayRow, RowError

traffic_cli = typer.Typer(
    name="traffic", help="Live traffic into reag: replay an app's logs.", no_args_is_help=True
)


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _app_and_policy(app_name: str | None, manifest: Path | None) -> tuple[str, RedactionPolicy]:
    """The app's name and its redaction policy: the manifest's ``traffic:`` section when a
    manifest is given, else the default policy (every built-in recogniser)."""
    from reag.apps import load_app
    from reag.corpus.errors import ManifestError
    from reag.traffic.redaction import RedactionPolicy

    if manifest is None:
        if not app_name:
            raise _fail("give --app NAME or --manifest app.yaml")
        return app_name, RedactionPolicy()
    try:
        config = load_app(manifest)
    except ManifestError as exc:
        raise _fail(str(exc)) from exc
    if app_name is not None and app_name != config.name:
        raise _fail(f"--app {app_name!r} differs from the manifest's name {config.name!r}")
    return config.name, config.traffic_policy().redaction


def _read(file: Path, maps: list[str], fmt: str | None) -> tuple[list[ReplayRow], list[RowError]]:
    from reag.traffic.replay import FieldMap, ReplayError, RowError, detect_format, replay

    try:
        fields = FieldMap.parse(maps)
        found = detect_format(file, fmt)
        rows, errors = [], []
        for outcome in replay(file, fields, found):
            if isinstance(outcome, RowError):
                errors.append(outcome)
            else:
                rows.append(outcome)
    except ReplayError as exc:
        raise _fail(str(exc)) from exc
    return rows, errors


def _send(
    rows: list[ReplayRow],
    *,
    app: str,
    policy: RedactionPolicy,
    bootstrap: str | None,
    topic: str,
    rate: float | None,
    timeout_s: float,
) -> tuple[int, int]:
    """Produce through the recorder, paced to ``rate`` per second; (recorded, failed)."""
    from reag.client import Recorder
    from services.kit.client_options import security_options
    from services.kit.settings import ServiceSettings

    kafka = ServiceSettings().kafka
    if bootstrap:
        kafka = kafka.model_copy(update={"bootstrap_servers": bootstrap})
    recorder = Recorder(
        bootstrap_servers=kafka.bootstrap_servers,
        app=app,
        topic=topic,
        redaction=policy,
        # The whole file may wait for Kafka: a replay is paced by --rate, never dropped.
        queue_size=max(1, len(rows)),
        client_id="reag-traffic-send",
        producer_options=security_options(kafka),
        close_timeout_s=timeout_s,
    )
    started = time.monotonic()
    try:
        for i, row in enumerate(rows):
            if rate:
                delay = started + i / rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            recorder.record_exchange(row.exchange)
        recorder.flush(timeout_s)
    finally:
        recorder.close(timeout_s)
    stats = recorder.stats()
    return stats.recorded, stats.failed


@traffic_cli.command("send")
def send(  # noqa: PLR0917 - typer maps each option to one parameter
    file: Annotated[
        Path, typer.Argument(exists=True, dir_okay=False, help="JSON lines (.jsonl) or CSV log.")
    ],
    app_name: Annotated[
        str | None, typer.Option("--app", help="The app (default: the manifest's name).")
    ] = None,
    manifest: Annotated[
        Path | None,
        typer.Option("--manifest", help="app.yaml whose traffic: section says what is redacted."),
    ] = None,
    maps: Annotated[
        list[str] | None,
        typer.Option(
            "--map",
            help="FIELD=PATH, repeatable: query, response, user_id, request_id, latency_s (or "
            "latency_ms), "
            "persona_hint, description, target, created_at or profile.<attribute>, from a "
            "dotted path into a JSON row or a CSV column. Unmapped query, response, user_id, "
            "request_id and latency_s are read from keys of those names.",
        ),
    ] = None,
    fmt: Annotated[
        str | None, typer.Option("--format", help="jsonl or csv (default: from the extension).")
    ] = None,
    rate: Annotated[
        float | None, typer.Option("--rate", min=0.001, help="At most this many events a second.")
    ] = None,
    bootstrap: Annotated[
        str | None,
        typer.Option("--bootstrap", help="Kafka bootstrap servers (default: REAG_KAFKA__*)."),
    ] = None,
    topic: Annotated[str, typer.Option("--topic", help="Where traffic goes.")] = "reag.traffic.v1",
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Validate and redact every row; send nothing.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    timeout_s: Annotated[
        float, typer.Option("--timeout", min=0, help="Seconds to wait for Kafka's acks.")
    ] = 30.0,
) -> None:
    """Replay a log of the app's requests and responses as live traffic.

    Exits 1 when any row was invalid or any event was not acknowledged (the
    valid rows are still sent), 2 when the file or the options cannot be used.
    """
    from google.protobuf.json_format import MessageToDict

    from reag.settings import ReagSettings
    from reag.traffic.live import to_traffic
    from reag.traffic.redaction import Redactor, configured_key

    app, policy = _app_and_policy(app_name, manifest)
    rows, errors = _read(file, maps or [], fmt)
    report: dict[str, Any] = {
        "valid": len(rows),
        "invalid": len(errors),
        "errors": [{"line": e.line, "reason": e.reason} for e in errors],
    }
    failed = 0
    if dry_run:
        # The deployment's key where there is one, so a dry run shows the pseudonyms a
        # real send would give (without one, a per-process key: the recorder's rule).
        redactor = Redactor(policy, pseudonym_key=configured_key(ReagSettings()))
        report["events"] = [
            MessageToDict(redactor.traffic(to_traffic(row.exchange, app))[0]) for row in rows
        ]
    else:
        recorded, failed = _send(
            rows,
            app=app,
            policy=policy,
            bootstrap=bootstrap,
            topic=topic,
            rate=rate,
            timeout_s=timeout_s,
        )
        report |= {"topic": topic, "recorded": recorded, "failed": failed}
    if as_json:
        typer.echo(json.dumps(report, ensure_ascii=False))
    else:
        for error in errors:
            typer.echo(f"  line {error.line}: {error.reason}", err=True)
        verb = "would be sent (dry run)" if dry_run else f"acknowledged on {topic}"
        sent = len(rows) if dry_run else report["recorded"]
        typer.echo(
            f"{app}: {sent} of {len(rows)} valid rows {verb}; {len(errors)} rows invalid"
            + ("" if dry_run else f"; {failed} events failed"),
            err=True,
        )
    if errors or failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(traffic_cli)
