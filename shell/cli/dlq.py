"""``reag dlq list|show|replay``: what reached ``reag.dlq.v1``, and sending it back.

A dead letter keeps the original event's bytes, key and headers, where it was
read (topic, partition, offset), which service gave up on it, when, and why
(a stable ``error_type`` and a reason a person can act on). ``list`` and
``show`` print all of that but the payload, of which only the size is shown:
payloads hold users' queries and profiles. ``replay`` produces the original
event to its original topic, keyed as before, once its cause is fixed: after
``reag corpus add`` for ``app_not_loaded``, after a fix for a bug. Replaying a
letter twice sends its event twice; outputs are keyed and the ledger dedups,
so no result is doubled (docs/operations.md, "Dead letters").
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import textwrap
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from services.kit.settings import KafkaSettings
    from shell.kafka_io.dlq import StoredLetter

dlq_cli = typer.Typer(
    name="dlq",
    help="Dead letters: list, show and replay what reached reag.dlq.v1.",
    no_args_is_help=True,
)

# Original headers whose values say nothing about a user; others are shown by size only.
_SAFE_HEADERS = frozenset({"content-type", "x-reag-type", "traceparent", "tracestate"})
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}

Reason = Annotated[
    str | None,
    typer.Option("--reason", help="Only this error_type (app_not_loaded, undecodable, ...)."),
]
Since = Annotated[
    str | None,
    typer.Option("--since", help="Only letters written since: 30m, 2h, 7d, or an ISO-8601 time."),
]
App = Annotated[str | None, typer.Option("--app", help="Only events of this app.")]
Service = Annotated[str | None, typer.Option("--service", help="Only letters of this service.")]
Bootstrap = Annotated[
    str | None,
    typer.Option("--bootstrap", help="Kafka bootstrap servers (default REAG_KAFKA__...)."),
]
AsJson = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def parse_since(text: str | None, now: datetime | None = None) -> datetime | None:
    """``30m`` / ``2h`` / ``7d`` before now, or an ISO-8601 time (UTC when it has no zone)."""
    if text is None:
        return None
    match = _DURATION.match(text.strip())
    if match:
        seconds = float(match.group(1)) * _UNITS[match.group(2)]
        return (now or datetime.now(UTC)) - timedelta(seconds=seconds)
    try:
        when = datetime.fromisoformat(text)
    except ValueError as exc:
        raise _fail(f"--since {text!r} is neither a duration (30m, 2h, 7d) nor a time") from exc
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _kafka(bootstrap: str | None) -> KafkaSettings:
    from services.kit.settings import ServiceSettings

    kafka = ServiceSettings().kafka
    if bootstrap:
        kafka = kafka.model_copy(update={"bootstrap_servers": bootstrap})
    return kafka


def _stream(bootstrap: str | None, consume: Callable[[StoredLetter], bool]) -> None:
    """Hand every dead letter to ``consume`` as it is read, until it returns False; the
    topic is streamed (shell.kafka_io.dlq), never held in memory."""
    from shell.kafka_io.dlq import stream_dead_letters

    kafka = _kafka(bootstrap)

    async def run() -> None:
        letters = stream_dead_letters(kafka)
        async with contextlib.aclosing(letters):
            async for letter in letters:
                if not consume(letter):
                    return

    try:
        asyncio.run(run())
    except Exception as exc:  # aiokafka's connection errors share no stubbed base
        raise _fail(
            f"cannot read the dead-letter topic at {kafka.bootstrap_servers} "
            f"({type(exc).__name__}); start the stack with `reag up` or set "
            "REAG_KAFKA__BOOTSTRAP_SERVERS",
            code=1,
        ) from exc


def _filter(
    reason: str | None, since: str | None, app: str | None, service: str | None
) -> Callable[[StoredLetter], bool]:
    from shell.kafka_io.dlq import matches

    cutoff = parse_since(since)
    return lambda s: matches(s, reason=reason, since=cutoff, app=app, service=service)


def summary(stored: StoredLetter) -> dict[str, Any]:
    """What a listing shows of a letter: everything but the payload, which only has a size."""
    letter = stored.letter
    failed = stored.failed_at
    return {
        "where": stored.where,
        "failed_at": failed.isoformat() if failed else None,
        "service": letter.service,
        "error_type": letter.error_type,
        "reason": letter.reason,
        "topic": letter.topic,
        "partition": letter.partition,
        "offset": letter.offset,
        "key": letter.key.decode("utf-8", "replace"),
        "app": stored.app,
        "size_bytes": stored.size_bytes,
        "cut": stored.cut or None,
    }


def details(stored: StoredLetter) -> dict[str, Any]:
    """``summary`` plus the original headers (values only of those that carry no user data)."""
    headers = {
        k: (v if k in _SAFE_HEADERS else f"[{len(v)} characters]")
        for k, v in sorted(stored.letter.headers.items())
    }
    return {
        **summary(stored),
        "headers": headers,
        "llm_output_chars": stored.llm_output_chars,
    }


def _line(row: dict[str, Any]) -> str:
    reason = row["reason"] if len(row["reason"]) <= 100 else row["reason"][:97] + "..."
    return (
        f"{row['where']:>9}  {row['failed_at'] or '-':32}  {row['service']:12}  "
        f"{row['error_type']:22}  {row['topic']}[{row['partition']}]@{row['offset']}  "
        f"key={row['key']}  app={row['app'] or '-'}  {row['size_bytes']} B  {reason}"
    )


@dlq_cli.command("list")
def list_letters(  # noqa: PLR0917 - typer maps each option to one parameter
    reason: Reason = None,
    since: Since = None,
    app: App = None,
    service: Service = None,
    bootstrap: Bootstrap = None,
    as_json: AsJson = False,
) -> None:
    """Dead letters, oldest first per partition, with counts by reason; payloads by size only.

    Rows are printed as they are read (``--json``: a JSON array, streamed)."""
    wanted = _filter(reason, since, app, service)
    counts: Counter[str] = Counter()

    def show_row(stored: StoredLetter) -> bool:
        if not wanted(stored):
            return True
        row = summary(stored)
        if as_json:
            item = textwrap.indent(json.dumps(row, indent=2), "  ")
            typer.echo(("[\n" if not counts else ",\n") + item, nl=False)
        else:
            typer.echo(_line(row))
        counts[row["error_type"]] += 1
        return True

    _stream(bootstrap, show_row)
    if as_json:
        typer.echo("\n]" if counts else "[]")
        return
    by_reason = ", ".join(f"{k} {v}" for k, v in counts.most_common()) or "none"
    typer.echo(f"{counts.total()} dead letter(s): {by_reason}")


@dlq_cli.command("show")
def show(
    where: Annotated[str, typer.Argument(help="PARTITION:OFFSET on reag.dlq.v1, from `list`.")],
    bootstrap: Bootstrap = None,
    as_json: AsJson = False,
) -> None:
    """One dead letter in full, but its payload (size only) and user-bearing headers."""
    found: list[StoredLetter] = []

    def find(stored: StoredLetter) -> bool:
        if stored.where == where:
            found.append(stored)
        return not found

    _stream(bootstrap, find)
    if not found:
        raise _fail(f"no dead letter at {where} (give PARTITION:OFFSET as `reag dlq list` shows)")
    row = details(found[0])
    if as_json:
        typer.echo(json.dumps(row, indent=2))
        return
    for key, value in row.items():
        if isinstance(value, dict):
            typer.echo(f"{key}:")
            for k, v in value.items():
                typer.echo(f"  {k}: {v}")
        else:
            typer.echo(f"{key}: {value}")


@dlq_cli.command("replay")
def replay(  # noqa: PLR0917 - typer maps each option to one parameter
    reason: Reason = None,
    since: Since = None,
    app: App = None,
    service: Service = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would be replayed; send nothing.")
    ] = False,
    bootstrap: Bootstrap = None,
    as_json: AsJson = False,
) -> None:
    """Send the selected letters' events back to their original topics, keyed as before.

    A letter whose payload was cut to fit the dead-letter topic is counted, not sent."""
    from shell.kafka_io.dlq import replay as send_back

    wanted = _filter(reason, since, app, service)
    kafka = _kafka(bootstrap)
    try:
        done = asyncio.run(send_back(kafka, wanted, dry_run=dry_run))
    except Exception as exc:  # aiokafka's errors share no stubbed base
        raise _fail(f"replay stopped: {type(exc).__name__}", code=1) from exc
    report = {
        "matched": done.matched,
        "replayed": done.replayed,
        "not_replayable": done.not_replayable,
        "dry_run": dry_run,
        "by_topic": dict(done.by_topic),
        "by_reason": dict(done.by_reason),
    }
    if as_json:
        typer.echo(json.dumps(report, indent=2))
        return
    verb = "would replay" if dry_run else "replayed"
    sendable = done.matched - done.not_replayable
    typer.echo(
        f"{verb} {sendable if dry_run else done.replayed} of {done.matched} matching dead letter(s)"
    )
    if done.not_replayable:
        typer.echo(f"  {done.not_replayable} not replayable: payload cut to fit (x-reag-cut)")
    for topic, n in done.by_topic.most_common():
        typer.echo(f"  {topic}: {n}")


def register(app: typer.Typer) -> None:
    app.add_typer(dlq_cli)
