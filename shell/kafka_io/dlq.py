"""Kafka for ``reag dlq``: read the dead-letter topic, and replay letters to where they came from.

Reading uses no consumer group: every partition is read from its start up to
the end offsets seen when the read began, so a listing is a snapshot and never
waits for a group to form. A replay produces the letter's original bytes,
key and headers to its original topic with acks=all, adding
``x-reag-replayed-from``; replaying the same letter twice gives the consumer
the same event twice, which the keyed outputs and the ledger's dedup absorb.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from google.protobuf.message import DecodeError

from reag.v1 import events_pb2 as pb
from services.kit.client_options import client_options
from services.kit.settings import KafkaSettings
from services.kit.topology import DLQ, TOPICS

REPLAYED_FROM = "x-reag-replayed-from"


@dataclass(frozen=True, slots=True)
class StoredLetter:
    """One record of the dead-letter topic, with what can be said without its payload."""

    partition: int
    offset: int
    letter: pb.DeadLetter
    app: str
    llm_output_chars: int  # size of the x-reag-llm-output header, 0 when absent

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


def _stored(record: Any) -> StoredLetter | None:
    try:
        letter = pb.DeadLetter.FromString(record.value or b"")
    except (DecodeError, ValueError):
        return None
    output = dict(record.headers or ()).get("x-reag-llm-output", b"")
    return StoredLetter(record.partition, record.offset, letter, app_of(letter), len(output))


async def read_dead_letters(
    kafka: KafkaSettings, *, topic: str = DLQ, timeout_s: float = 30.0
) -> list[StoredLetter]:
    """Every dead letter on ``topic`` up to its current end, oldest first per partition."""
    consumer = AIOKafkaConsumer(
        group_id=None,
        enable_auto_commit=False,
        request_timeout_ms=int(timeout_s * 1000),
        **client_options(kafka),
    )
    await consumer.start()
    letters: list[StoredLetter] = []
    try:
        if topic not in await consumer.topics():  # also refreshes the cluster's metadata
            return []
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        if not partitions:
            return []
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        ends = await consumer.end_offsets(partitions)
        remaining = {tp for tp in partitions if ends[tp] > 0}
        while remaining:
            batch = await consumer.getmany(*remaining, timeout_ms=int(timeout_s * 1000))
            if not batch:
                break  # the broker stopped answering: return what was read
            for tp, records in batch.items():
                letters += [s for s in map(_stored, records) if s is not None]
                if records and records[-1].offset + 1 >= ends[tp]:
                    remaining.discard(tp)
    finally:
        await consumer.stop()
    return sorted(letters, key=lambda s: s.failed_at or datetime.min.replace(tzinfo=UTC))


def select(
    letters: Iterable[StoredLetter],
    *,
    reason: str | None = None,
    since: datetime | None = None,
    app: str | None = None,
    service: str | None = None,
) -> list[StoredLetter]:
    """``reason`` matches the stable ``error_type`` (``app_not_loaded``, ``undecodable``...)."""
    return [
        s
        for s in letters
        if (reason is None or s.letter.error_type == reason)
        and (since is None or (s.failed_at is not None and s.failed_at >= since))
        and (app is None or s.app == app)
        and (service is None or s.letter.service == service)
    ]


async def replay(kafka: KafkaSettings, letters: Sequence[StoredLetter]) -> int:
    """Produce each letter's original event to its original topic; returns how many."""
    if not letters:
        return 0
    producer = AIOKafkaProducer(acks="all", **client_options(kafka))
    await producer.start()
    try:
        for stored in letters:
            letter = stored.letter
            headers = [(k, v.encode()) for k, v in letter.headers.items() if k != REPLAYED_FROM]
            headers.append((REPLAYED_FROM, f"{DLQ}[{stored.partition}]@{stored.offset}".encode()))
            await producer.send_and_wait(
                letter.topic, letter.value, key=letter.key or None, headers=headers
            )
    finally:
        await producer.stop()
    return len(letters)
