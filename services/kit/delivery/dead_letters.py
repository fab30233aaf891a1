"""What a dead letter keeps of a failed event, and writing it without ever looping.

A letter keeps what ``reag dlq replay`` needs to send the event back (its original
bytes, its key, the headers reag reads) and nothing else an arbitrary producer put
there: headers outside ``KEPT_HEADERS`` are dropped (counted in
``x-reag-headers-dropped``), kept header values are cut to ``HEADER_VALUE_CHARS``, and a
key longer than ``KEY_BYTES`` is replaced by its SHA-256 digest (replay still groups
the events of one key on one partition). reag keys events by case id, so a key in
bounds is an identifier, not user text.

A letter that does not fit (redaction can nearly double an event's bytes) has its
payload cut to ``DeliverySettings.dead_letter_max_bytes``, with the sizes before and
after in its reason and in the ``x-reag-cut`` header; a cut letter is not replayable.
If the broker refuses it for its size still (a lower ``message.max.bytes``), a smaller
cut is tried, then a bare letter with no payload or headers. A refusal for any other
reason that is not transient also falls back to the bare letter, and if even that is
refused the event is given up loudly (an ERROR log with its address and
``reag_dead_letters_lost_total``): a dead letter never loops its partition.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Any, Literal

from google.protobuf.timestamp_pb2 import Timestamp

from reag import metrics
from reag.traffic.live import TRACE_HEADERS
from reag.v1 import events_pb2 as pb
from services.kit.codec import TYPE_HEADER
from services.kit.delivery.outputs import headers_for
from services.kit.faults import Poison, Transient, classify, too_large

log = logging.getLogger("reag.delivery")

# Original headers reag reads on replay (the type check, the encoding, the trace context).
KEPT_HEADERS = frozenset({"content-type", TYPE_HEADER, *TRACE_HEADERS})
HEADER_VALUE_CHARS = 512
KEY_BYTES = 128
CUT_HEADER = "x-reag-cut"
DROPPED_HEADERS = "x-reag-headers-dropped"
# Room for the record's own framing and the protobuf length prefixes.
_SLACK_BYTES = 256

Written = Literal["written", "lost"]


def letter_key(key: bytes | None) -> bytes:
    """The key a letter keeps: the original when short enough, else its digest."""
    if not key:
        return b""
    if len(key) <= KEY_BYTES:
        return key
    return b"sha256:" + hashlib.sha256(key).hexdigest().encode()


def kept_headers(headers: Any) -> tuple[dict[str, str], int]:
    """The original headers a letter keeps, and how many it dropped."""
    kept: dict[str, str] = {}
    dropped = 0
    for name, raw in headers or ():
        if name in KEPT_HEADERS and name not in kept:
            kept[name] = bytes(raw or b"").decode("utf-8", "replace")[:HEADER_VALUE_CHARS]
        else:
            dropped += 1
    return kept, dropped


@dataclass(frozen=True, slots=True)
class Letter:
    """One dead letter as it is produced to the DLQ."""

    body: bytes
    key: bytes | None
    headers: dict[str, str]
    cut: bool


def build(
    service: str,
    record: Any,
    poison: Poison,
    value: bytes,
    *,
    max_bytes: int,
    bare: bool = False,
) -> Letter:
    """The letter of ``record`` with ``value`` (its bytes, scrubbed on a first hop), cut to
    ``max_bytes``; ``bare`` keeps no payload and no original headers."""
    original, dropped = kept_headers(record.headers)
    letter = pb.DeadLetter(
        service=service,
        topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        key=letter_key(record.key),
        headers={} if bare else original,
        reason=poison.reason,
        error_type=poison.error_type,
    )
    stamp = Timestamp()
    stamp.GetCurrentTime()
    letter.failed_at.CopyFrom(stamp)
    headers = headers_for(letter) | ({} if bare else poison.extra)
    if dropped or bare:
        headers[DROPPED_HEADERS] = str(dropped + (len(original) if bare else 0))
    size = len(value)
    note = f"value {size} B -> {size} B"
    suffix = f" [payload cut to fit the dead-letter topic: {size} of {size} bytes kept; "
    suffix += "not replayable]"
    framing = sum(len(k) + len(v) for k, v in headers.items()) + len(letter.key) + _SLACK_BYTES
    room = max_bytes - letter.ByteSize() - len(suffix) - len(CUT_HEADER) - len(note) - framing
    keep = 0 if bare else max(0, min(size, room))
    cut = keep < size
    if cut:
        letter.reason += suffix.replace(f"{size} of", f"{keep} of", 1)
        headers[CUT_HEADER] = f"value {size} B -> {keep} B"
    letter.value = value[:keep]
    return Letter(letter.SerializeToString(), letter.key or None, headers, cut)


async def write(
    publisher: Any,
    service: str,
    record: Any,
    poison: Poison,
    value: bytes,
    *,
    max_bytes: int,
) -> Written | Transient:
    """Publish the letter, cutting it on a refusal for size and stripping it on any other
    refusal that is not transient; a transient fault is returned for the caller to wait."""
    plans = ((max_bytes, False), (max(max_bytes // 8, 1024), False), (max_bytes, True))
    step = 0
    while step < len(plans):
        limit, bare = plans[step]
        letter = build(service, record, poison, value, max_bytes=limit, bare=bare)
        try:
            await publisher.publish(letter.body, key=letter.key, headers=letter.headers)
        except Exception as exc:  # noqa: BLE001 - every refusal is sorted below
            if too_large(exc):
                step += 1
                continue
            fault = classify(exc)
            if isinstance(fault, Transient):
                return fault
            step = len(plans) - 1 if not bare else len(plans)
            log.warning(
                "%s: dead letter of %s[%d]@%d refused (%s); %s",
                service,
                record.topic,
                record.partition,
                record.offset,
                type(exc).__name__,
                "writing a bare one" if not bare else "giving the event up",
            )
            continue
        if letter.cut:
            metrics.DEAD_LETTERS_CUT.labels(service, record.topic).inc()
            log.warning(
                "%s: dead letter of %s[%d]@%d cut to fit: %s",
                service,
                record.topic,
                record.partition,
                record.offset,
                letter.headers[CUT_HEADER],
            )
        return "written"
    metrics.DEAD_LETTERS_LOST.labels(service, record.topic).inc()
    log.error(
        "%s: %s[%d]@%d (%s) could not be dead-lettered at all; committed without a letter",
        service,
        record.topic,
        record.partition,
        record.offset,
        poison.error_type,
    )
    return "lost"
