"""Logs of an app's past traffic, read row by row into live exchanges (``reag traffic send``).

A log is JSON lines or CSV; a field map says where each part of an exchange
is in a row (``query=input.question``: a dotted path into a JSON row, integers
indexing lists; for CSV the column of that name). A row that cannot become an
exchange costs that row, reported with its line number and a reason that
names paths and types, never the row's content, which is the user's data.
Nothing here touches Kafka: the command produces with ``reag.client``.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from reag.traffic.live import InvalidExchangeError, LiveExchange, attribute_text, check_exchange

Format = Literal["jsonl", "csv"]

# What a map may fill: the exchange's fields, and ``profile.<attribute>``.
TEXT_FIELDS = (
    "query",
    "response",
    "user_id",
    "request_id",
    "persona_hint",
    "description",
    "target",
)
FIELDS = (*TEXT_FIELDS, "latency_s", "latency_ms", "created_at")
REQUIRED = ("query", "response")
# Without a map, each field is read from the row's key of the same name.
DEFAULT_PATHS: dict[str, str] = {
    name: name for name in ("query", "response", "user_id", "request_id", "latency_s")
}
_EXTENSIONS: dict[str, Format] = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}
_MISSING = object()


class ReplayError(ValueError):
    """The file or the field map cannot be used at all (as opposed to one bad row)."""


@dataclass(frozen=True, slots=True)
class FieldMap:
    """Where each field of an exchange is in a row: field -> path, attribute -> path."""

    fields: Mapping[str, str]
    attributes: Mapping[str, str]

    @classmethod
    def parse(cls, specs: Sequence[str]) -> FieldMap:
        """From ``--map`` options, ``FIELD=PATH``; each one replaces the default for FIELD."""
        fields = dict(DEFAULT_PATHS)
        attributes: dict[str, str] = {}
        for spec in specs:
            name, sep, path = spec.partition("=")
            name, path = name.strip(), path.strip()
            if not sep or not name or not path:
                raise ReplayError(f"--map {spec!r}: expected FIELD=PATH, e.g. query=input.question")
            if name.startswith("profile."):
                attribute = name.removeprefix("profile.")
                if not attribute:
                    raise ReplayError(f"--map {spec!r}: profile. needs an attribute name")
                attributes[attribute] = path
            elif name in FIELDS:
                fields[name] = path
            else:
                raise ReplayError(
                    f"--map {spec!r}: unknown field {name!r}; map one of "
                    f"{', '.join(FIELDS)} or profile.<attribute>"
                )
        return cls(fields=fields, attributes=attributes)


@dataclass(frozen=True, slots=True)
class RowError:
    line: int
    reason: str


@dataclass(frozen=True, slots=True)
class ReplayRow:
    line: int
    exchange: LiveExchange


class _BadRowError(Exception):
    pass


def detect_format(path: Path, override: str | None = None) -> Format:
    if override is not None:
        if override not in ("jsonl", "csv"):
            raise ReplayError(f"--format {override!r}: use jsonl or csv")
        return "jsonl" if override == "jsonl" else "csv"
    found = _EXTENSIONS.get(path.suffix.lower())
    if found is None:
        raise ReplayError(
            f"{path}: cannot tell the format from the extension {path.suffix!r} "
            "(.jsonl, .ndjson or .csv); pass --format jsonl|csv"
        )
    return found


def lookup(row: Any, path: str) -> Any:
    """The value at a dotted ``path``; a key that is the whole path wins (CSV columns,
    JSON keys with dots in them). ``_MISSING`` when there is nothing there."""
    if isinstance(row, Mapping) and path in row:
        return row[path]
    node = row
    for step in path.split("."):
        if isinstance(node, Mapping):
            if step not in node:
                return _MISSING
            node = node[step]
        elif isinstance(node, list) and step.lstrip("-").isdigit():
            index = int(step)
            if not -len(node) <= index < len(node):
                return _MISSING
            node = node[index]
        else:
            return _MISSING
    return node


def _kind(value: Any) -> str:
    """What a value is, in JSON's words and with its article: never the value itself."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__}"


def _text_field(name: str, path: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    # Ids are often numbers in logs; text fields that hold a number are read as its text.
    if isinstance(value, int) and not isinstance(value, bool) and name != "query":
        return str(value)
    raise _BadRowError(f"{name} at {path!r} is {_kind(value)}, not text")


def _number(name: str, path: str, value: Any) -> float:
    if isinstance(value, bool):
        raise _BadRowError(f"{name} at {path!r} is a boolean, not a number")
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise _BadRowError(f"{name} at {path!r} is text that is not a number") from None
    if not isinstance(value, int | float):
        raise _BadRowError(f"{name} at {path!r} is {_kind(value)}, not a number")
    return float(value)


def _timestamp(path: str, value: Any) -> float:
    """Seconds since the epoch, from a number (seconds, or milliseconds past 1e11) or an
    ISO 8601 string; a time without a zone is taken as UTC."""
    if isinstance(value, str):
        text = value.strip()
        try:
            value = float(text)
        except ValueError:
            try:
                when = datetime.fromisoformat(text)
            except ValueError:
                raise _BadRowError(
                    f"created_at at {path!r} is neither a number nor an ISO 8601 time"
                ) from None
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            return when.timestamp()
    seconds = _number("created_at", path, value)
    if not math.isfinite(seconds) or seconds < 0:
        raise _BadRowError(f"created_at at {path!r} is not a time")
    return seconds / 1000.0 if seconds > 1e11 else seconds


def _row_id(row: Any) -> str:
    """A request id for a row without one, fixed by the row's content: sending the same log
    twice gives the same case ids, which downstream dedup recognises."""
    canonical = json.dumps(row, sort_keys=True, ensure_ascii=False, default=str)
    return "replay-" + hashlib.sha256(canonical.encode()).hexdigest()[:16]


def map_row(row: Any, fields: FieldMap) -> LiveExchange:
    """One row as an exchange; ``_BadRowError`` with a content-free reason if it cannot be."""
    if not isinstance(row, Mapping):
        raise _BadRowError(f"the row is {_kind(row)}, not an object")
    values: dict[str, Any] = {}
    for name, path in fields.fields.items():
        value = lookup(row, path)
        if value is _MISSING or value is None or (isinstance(value, str) and not value.strip()):
            if name in REQUIRED:
                raise _BadRowError(f"no {name} at {path!r}")
            continue
        if name in TEXT_FIELDS:
            values[name] = _text_field(name, path, value)
        elif name in ("latency_s", "latency_ms"):
            latency = _number(name, path, value)
            if not math.isfinite(latency) or latency < 0:
                raise _BadRowError(f"{name} at {path!r} is not a non-negative number")
            values["latency_s"] = latency / 1000.0 if name == "latency_ms" else latency
        else:
            values[name] = _timestamp(path, value)
    attributes: dict[str, str] = {}
    for attribute, path in fields.attributes.items():
        value = lookup(row, path)
        text = None if value is _MISSING else attribute_text(value)
        if text is not None and text != "":
            attributes[attribute] = text
    if not values.get("request_id"):
        values["request_id"] = _row_id(row)
    exchange = LiveExchange(**values, attributes=attributes)
    try:
        check_exchange(exchange)
    except InvalidExchangeError as exc:
        raise _BadRowError(str(exc)) from None
    return exchange


def _jsonl_rows(path: Path) -> Iterator[tuple[int, Any]]:
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, start=1):
            try:
                text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError:
                yield number, RowError(number, "the line is not UTF-8 text")
                continue
            if not text.strip():
                continue
            try:
                yield number, json.loads(text)
            except json.JSONDecodeError as exc:
                # exc.msg is the parser's fixed wording; the column says where, not what.
                yield number, RowError(number, f"not JSON: {exc.msg} (column {exc.colno})")


def _csv_rows(path: Path) -> Iterator[tuple[int, Any]]:
    """Rows by column name; a record's line is the line it ends on (the line, for any
    record without a quoted line break)."""
    with path.open(encoding="utf-8-sig", errors="replace", newline="") as handle:
        reader = csv.DictReader(handle)
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:  # the csv module's wording names no content
                yield reader.line_num, RowError(reader.line_num, f"malformed CSV: {exc}")
                continue
            line = reader.line_num
            extra = row.pop(None, None)  # DictReader's key for fields past the header
            if extra:
                yield line, RowError(line, f"{len(extra)} more fields than the header has")
                continue
            yield line, row


def replay(path: Path, fields: FieldMap, fmt: Format) -> Iterator[ReplayRow | RowError]:
    """Every row of the log, as an exchange or as the reason it is not one.

    ``ReplayError`` only when the file cannot be read at all.
    """
    rows = _jsonl_rows(path) if fmt == "jsonl" else _csv_rows(path)
    try:
        for line, row in rows:
            if isinstance(row, RowError):
                yield row
                continue
            try:
                yield ReplayRow(line, map_row(row, fields))
            except _BadRowError as exc:
                yield RowError(line, str(exc))
    except OSError as exc:
        raise ReplayError(f"{path}: cannot read: {exc.strerror or exc}") from exc
