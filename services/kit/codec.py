"""Decoding events off the wire, with every way they can be bad named.

A bad event is never an exception that escapes a handler: the ``consume``
decorator turns a ``BadEventError`` into a dead letter carrying its
``error_type`` and reason, commits, and moves on to the next event.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from google.protobuf.message import DecodeError, Message

from reag.v1 import events_pb2 as pb

M = TypeVar("M", bound=Message)

SUPPORTED_SCHEMA_VERSIONS = frozenset({pb.SCHEMA_VERSION_1})

# Fields that must be non-empty for an event to be processable, per payload type.
# EventMeta's case_id, app and schema_version are required on every event with a meta.
REQUIRED_FIELDS: dict[type[Message], tuple[str, ...]] = {
    pb.Traffic: ("query", "actual_response"),
    pb.Intention: ("query", "persona"),
    pb.Interpretation: ("intention",),
    pb.Oracle: ("oracle_id", "criteria"),
    pb.JudgeRequest: ("criterion", "actual_response"),
    pb.Verdict: ("criterion_id", "label"),
    pb.Abstain: ("request",),
    pb.Review: ("criterion_id", "label"),
    pb.Threshold: ("app", "tier"),
}


ID_QUOTE_CHARS = 64


def quoted_id(value: str) -> str:
    """An identifier from a payload as a reason may show it: quoted and cut short.

    Reasons go to dead letters and logs; an app name is needed to act on one, but a
    payload can put anything in that field, so no more than a name's length is echoed.
    """
    if len(value) <= ID_QUOTE_CHARS:
        return repr(value)
    return repr(value[:ID_QUOTE_CHARS]) + f"… ({len(value)} characters)"


class BadEventError(Exception):
    """An input that can never be processed as it is. ``error_type`` is a stable code."""

    def __init__(self, error_type: str, reason: str) -> None:
        super().__init__(reason)
        self.error_type = error_type
        self.reason = reason


def _is_set(message: Message, field: str) -> bool:
    descriptor = message.DESCRIPTOR.fields_by_name[field]
    if descriptor.message_type is not None and not descriptor.is_repeated:
        return message.HasField(field)
    return bool(getattr(message, field))


def check_payload(value: bytes | None, expected: str, *, max_bytes: int) -> bytes:
    """``value`` if it is neither empty nor over ``max_bytes``: checked before any parsing,
    for reag events and for payloads reag does not own (OTLP spans) alike."""
    if value is None or len(value) == 0:
        raise BadEventError("empty", f"empty payload where a {expected} was expected")
    if len(value) > max_bytes:
        raise BadEventError(
            "oversized",
            f"{len(value)} bytes exceeds the {max_bytes}-byte limit (REAG_KAFKA__MAX_EVENT_BYTES)",
        )
    return value


TYPE_HEADER = "x-reag-type"
# The message types reag puts on its topics: a dead letter's reason may name these, never
# whatever else a header held.
KNOWN_TYPES = frozenset(pb.DESCRIPTOR.message_types_by_name)


def check_declared_type(headers: Iterable[tuple[str, bytes]] | None, expected: str) -> None:
    """Refuse an event whose ``x-reag-type`` header names another type.

    Protobuf bytes do not say which message they are: a reag event of another type
    often parses as this one, field numbers and all (an Intention reads as a valid
    Traffic), and would be processed as nonsense. Every reag producer names the type
    in this header; events without it (an app's own producer) are parsed as before.
    """
    for key, raw in headers or ():
        if key != TYPE_HEADER:
            continue
        declared = raw.decode("utf-8", "replace")
        if declared != expected:
            shown = repr(declared) if declared in KNOWN_TYPES else "another type"
            raise BadEventError(
                "wrong_type",
                f"the {TYPE_HEADER} header says {shown}, but this topic carries {expected}; "
                "the producer published to the wrong topic",
            )


def decode_event(value: bytes | None, event_type: type[M], *, max_bytes: int) -> M:
    value = check_payload(value, event_type.__name__, max_bytes=max_bytes)
    event = event_type()
    try:
        event.ParseFromString(value)
    except (DecodeError, ValueError) as exc:
        raise BadEventError(
            "undecodable",
            f"not a valid protobuf {event_type.__name__} ({type(exc).__name__})",
        ) from exc
    validate_event(event)
    return event


def validate_event(event: Message) -> None:
    missing: list[str] = []
    if "meta" in event.DESCRIPTOR.fields_by_name:
        meta = getattr(event, "meta")  # noqa: B009
        if not event.HasField("meta"):
            missing.append("meta")
        else:
            missing += [f"meta.{f}" for f in ("case_id", "app") if not getattr(meta, f)]
            if meta.schema_version == 0:
                missing.append("meta.schema_version")
            elif meta.schema_version not in SUPPORTED_SCHEMA_VERSIONS:
                raise BadEventError(
                    "unknown_schema_version",
                    f"schema_version {meta.schema_version} is not one this service knows "
                    f"({sorted(SUPPORTED_SCHEMA_VERSIONS)}); upgrade the service or the producer",
                )
    missing += [f for f in REQUIRED_FIELDS.get(type(event), ()) if not _is_set(event, f)]
    if missing:
        raise BadEventError(
            "missing_field",
            f"{type(event).__name__} lacks required field(s): {', '.join(missing)}",
        )
