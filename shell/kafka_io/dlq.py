"""Kafka for ``reag dlq``: stream the dead-letter topic, and replay letters to where they
came from.

Reading uses no consumer group: each partition is read in turn from its start up to the
end offset seen when the read began, so a listing is a snapshot and never waits for a
group to form. It is a stream, in bounded memory: one partition at a time, fetches capped
at ``FETCH_BYTES``, and a letter's payload dropped as soon as its size and app are known
(kept only for a replay, one letter at a time), so a topic of any size is listed or
replayed in a few MiB. Letters come oldest first per partition.

A replay produces the letter's original bytes, key and headers to its original topic with
acks=all, adding ``x-reag-replayed-from``; replaying the same letter twice gives the
consumer the same event twice, which the keyed outputs and the ledger's dedup absorb. A
letter whose payload was cut to fit the topic (``x-reag-cut``) is not replayed: its bytes
are no longer the event.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import AsyncGenerator, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from google.protobuf.message import DecodeError

from reag.v1 import events_pb2 as pb
from services.kit.client_options import client_options
from services.kit.delivery.dead_letters import CUT_HEADER
from services.kit.settings import KafkaSettings
from services.kit.topology import DLQ, TOPICS

REPLAYED_FROM = "x-reag-replayed-from"
# What one fetch may bring: about one letter of up to ~1 MB (the dead-letter limit); a
# broker still returns a larger first record whole. Records are decoded a few at a time.
FETCH_BYTES = 1024 * 1024
_BATCH_RECORDS = 4


@dataclass(frozen=True, slots=True)
class StoredLetter:
    """One record of the dead-letter topic, with what can be said without its payload."""

    partition: int
    offset: int
    letter: pb.DeadLetter  # its value is empty unless read for a replay
    app: str
    size_bytes: int  # of the original event's bytes as the letter holds them
    llm_output_chars: int = 0  # size of the x-reag-llm-output header, 0 when absent
    cut: str = ""  # the x-reag-cut note ("value N B -> M B") of a letter cut to fit

    @property
    def where(self) -> str:
        """The letter's address on the DLQ, as ``reag dlq show`` takes it."""
        return f"{self.partition}:{self.offset}"

    @property
    def failed_at(self) -> datetime | None:
        if not self.letter.HasField("failed_at"):
            return None
        return self.letter.failed_at.ToDatetime(tzinfo=UTC)


def app_of(letter: pb.DeadLetter) -> str:
    """The app of the dead event, read from its own ``meta``; empty when the bytes are not a
    reag event (undecodable, OTLP spans). Only the app's name is read, nothing else."""
    spec = next(
        (t for t in TOPICS if letter.topic == t.name or letter.topic.startswith(t.name)), None
    )
    if spec is None or not spec.reag_event:
        return ""
    event_type = getattr(pb, spec.payload, None)
    if event_type is None or "meta" not in event_type.DESCRIPTOR.fields_by_name:
        return ""
    try:
        event = event_type.FromString(letter.value)
    except (DecodeError, ValueError):
        return ""
    return str(event.meta.app)


def stored(record: Any, *, keep_value: bool = False) -> StoredLetter | None:
    """A DLQ record as a listing sees it; None when it is not a DeadLetter."""
    try:
        letter = pb.DeadLetter.FromString(record.value or b"")
    except (DecodeError, ValueError):
        return None
    headers = dict(record.headers or ())
    size, app = len(letter.value), app_of(letter)
    if not keep_value:
        letter.ClearField("value")
    return StoredLetter(
        record.partition,
        record.offset,
        letter,
        app,
        size,
        len(headers.get("x-reag-llm-output", b"")),
        bytes(headers.get(CUT_HEADER, b"")).decode("ascii", "replace"),
    )


async def stream_dead_letters(
    kafka: KafkaSettings,
    *,
    topic: str = DLQ,
    timeout_s: float = 30.0,
    keep_values: bool = False,
) -> AsyncGenerator[StoredLetter]:
    """Every dead letter on ``topic`` up to its current end, partition by partition.

    Close it (``contextlib.aclosing``) when stopping early, so its consumer stops."""
    consumer = AIOKafkaConsumer(
        group_id=None,
        enable_auto_commit=False,
        request_timeout_ms=int(timeout_s * 1000),
        fetch_max_bytes=FETCH_BYTES,
        max_partition_fetch_bytes=FETCH_BYTES,
        **client_options(kafka),
    )
    await consumer.start()
    try:
        if topic not in await consumer.topics():  # also refreshes the cluster's metadata
            return
        partitions = [
            TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())
        ]
        if not partitions:
            return
        starts = await consumer.beginning_offsets(partitions)
        ends = await consumer.end_offsets(partitions)
        for tp in partitions:
            if starts[tp] >= ends[tp]:
                continue
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            done = False
            while not done:
                batch = await consumer.getmany(
                    tp, timeout_ms=int(timeout_s * 1000), max_records=_BATCH_RECORDS
                )
                records = batch.get(tp, [])
                if not records:
                    return  # the broker stopped answering: what was read was yielded
                for record in records:
                    done = record.offset + 1 >= ends[tp]
                    letter = stored(record, keep_value=keep_values)
                    if letter is not None:
                        yield letter
                    if done:
                        break
    finally:
        await consumer.stop()


def matches(
    letter: StoredLetter,
    *,
    reason: str | None = None,
    since: datetime | None = None,
    app: str | None = None,
    service: str | None = None,
) -> bool:
    """``reason`` matches the stable ``error_type`` (``app_not_loaded``, ``undecodable``...)."""
    return (
        (reason is None or letter.letter.error_type == reason)
        and (since is None or (letter.failed_at is not None and letter.failed_at >= since))
        and (app is None or letter.app == app)
        and (service is None or letter.letter.service == service)
    )


def select(
    letters: Iterable[StoredLetter],
    *,
    reason: str | None = None,
    since: datetime | None = None,
    app: str | None = None,
    service: str | None = None,
) -> list[StoredLetter]:
    """The letters ``matches`` keeps, for a listing already in memory."""
    return [s for s in letters if matches(s, reason=reason, since=since, app=app, service=service)]


@dataclass(slots=True)
class ReplayReport:
    """What a replay matched, sent, and left because its payload was cut."""

    matched: int = 0
    replayed: int = 0
    not_replayable: int = 0
    by_topic: Counter[str] = field(default_factory=Counter)
    by_reason: Counter[str] = field(default_factory=Counter)


async def _send(producer: AIOKafkaProducer, letter: StoredLetter) -> None:
    dead = letter.letter
    headers = [(k, v.encode()) for k, v in dead.headers.items() if k != REPLAYED_FROM]
    headers.append((REPLAYED_FROM, f"{DLQ}[{letter.partition}]@{letter.offset}".encode()))
    await producer.send_and_wait(dead.topic, dead.value, key=dead.key or None, headers=headers)


async def replay(
    kafka: KafkaSettings,
    wanted: Callable[[StoredLetter], bool],
    *,
    dry_run: bool = False,
    topic: str = DLQ,
) -> ReplayReport:
    """Produce each wanted letter's original event to its original topic, streaming the DLQ."""
    report = ReplayReport()
    producer = None if dry_run else AIOKafkaProducer(acks="all", **client_options(kafka))
    if producer is not None:
        await producer.start()
    try:
        letters = stream_dead_letters(kafka, topic=topic, keep_values=not dry_run)
        async with contextlib.aclosing(letters):
            async for letter in letters:
                if not wanted(letter):
                    continue
                report.matched += 1
                report.by_topic[letter.letter.topic] += 1
                report.by_reason[letter.letter.error_type] += 1
                if letter.cut:
                    report.not_replayable += 1
                elif producer is not None:
                    await _send(producer, letter)
                    report.replayed += 1
    finally:
        if producer is not None:
            await producer.stop()
    return report
