"""Hostile bytes against delivery (issue 23): a dead letter too large is cut, never looped;
transient faults have a cap per event; exception messages, stray headers and long keys
stay out of dead letters and logs; the park is bounded by bytes."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from aiokafka import TopicPartition
from aiokafka.errors import KafkaConnectionError, MessageSizeTooLargeError
from faststream.kafka import KafkaMessage, TestKafkaBroker

from reag.llm.base import RateLimitedError
from reag.v1 import events_pb2 as pb
from services.kit.delivery import Delivery
from services.kit.delivery.dead_letters import CUT_HEADER, DROPPED_HEADERS, KEPT_HEADERS, write
from services.kit.faults import TRANSIENT_EXHAUSTED, NotLoaded, Poison, Transient
from services.kit.settings import DeliverySettings
from services.kit.testing import until
from services.kit.topology import DLQ
from tests.unit.services.test_faults import (
    FAST,
    Record,
    RecordingConsumer,
    never_gives_up,
    service_under_test,
    traffic_bytes,
)

CANARY = "CANARY-jane.doe@example.com"


def _letters(got: dict[str, list[bytes]]) -> list[pb.DeadLetter]:
    return [pb.DeadLetter.FromString(v) for v in got[DLQ]]


# --- item 4: a cap on transient faults, per event ---------------------------------------


async def test_an_event_that_always_meets_a_transient_fault_is_dead_lettered_as_exhausted() -> None:
    name = "exhausted"
    calls = {"n": 0}

    async def always_429(event: pb.Traffic) -> None:
        calls["n"] += 1
        raise RateLimitedError("429 caused by this very event")

    delivery = FAST.model_copy(update={"max_transient_attempts": 3})
    broker, got, _ = service_under_test(name, always_429, delivery=delivery)
    async with TestKafkaBroker(broker) as test_broker:
        # Today's main retries it forever: the publish never returns.
        await asyncio.wait_for(
            test_broker.publish(traffic_bytes("x1"), f"in-{name}", key=b"x1"), 30
        )
    (letter,) = _letters(got)
    assert calls["n"] == 3
    assert letter.error_type == TRANSIENT_EXHAUSTED
    assert letter.value == traffic_bytes("x1")  # the original bytes: replayable
    assert "RateLimitedError" in letter.reason
    assert "429" not in letter.reason  # the type, never the message
    assert got[f"out-{name}"] == []


async def test_the_cap_counts_per_event_and_a_long_wait_alone_exhausts_an_event() -> None:
    now = {"t": 0.0}
    tries: dict[tuple[int, int], int] = {}
    gave_up: list[tuple[int, int, str]] = []

    async def attempt(record: Any, may_park: bool) -> Any:
        event = (record.partition, record.offset)
        tries[event] = tries.get(event, 0) + 1
        if event == (1, 3) and tries[event] > 1:
            return "processed"  # partition 1's event meets one fault only
        if event == (0, 8) and tries[event] == 2:
            now["t"] = 101.0  # its second fault comes 101 s after its first
        return Transient("llm", "LLMTimeoutError")

    async def give_up(record: Any, poison: Poison) -> Any:
        gave_up.append((record.partition, record.offset, poison.error_type))
        return "dead_lettered"

    settings = FAST.model_copy(update={"max_transient_attempts": 2, "max_transient_s": 100.0})
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    consumer = RecordingConsumer({tp0, tp1})
    flow = Delivery("svc-cap", "t", settings, attempt, give_up, clock=lambda: now["t"])
    await flow.handle(Record(7, "demo", partition=0), consumer)
    await flow.handle(Record(3, "demo", partition=1), consumer)
    assert await until(lambda: flow.in_flight == 0, 10)
    assert gave_up == [(0, 7, TRANSIENT_EXHAUSTED)]  # the other event kept its own count
    assert tries == {(0, 7): 2, (1, 3): 2}
    assert ("commit", 8) in consumer.calls
    assert ("commit", 4) in consumer.calls

    # A third event, with room for many tries: the wait alone exhausts it.
    roomy = settings.model_copy(update={"max_transient_attempts": 10})
    flow = Delivery("svc-cap", "t", roomy, attempt, give_up, clock=lambda: now["t"])
    await flow.handle(Record(8, "demo", partition=0), consumer)
    assert await until(lambda: flow.in_flight == 0, 10)
    assert gave_up[-1] == (0, 8, TRANSIENT_EXHAUSTED)
    assert tries[(0, 8)] == 2
    assert ("commit", 9) in consumer.calls


# --- item 2: a dead letter that cannot be published as it is -----------------------------


async def test_a_dead_letter_too_large_is_cut_to_fit_with_a_note_of_the_sizes() -> None:
    name = "cut"

    async def bug(event: pb.Traffic) -> None:
        raise KeyError("a bug")

    event = pb.Traffic(query="q" * 3000, actual_response="r")
    event.meta.case_id, event.meta.app, event.meta.schema_version = "big", "demo", 1
    raw = event.SerializeToString()
    delivery = FAST.model_copy(update={"dead_letter_max_bytes": 4096})
    # Redaction can nearly double an event's bytes; this scrub doubles them.
    broker, got, _ = service_under_test(name, bug, delivery=delivery, scrub=lambda b: b + b)
    headers: list[dict[str, Any]] = []

    @broker.subscriber(DLQ, group_id="cut-headers")
    async def keep(body: bytes, message: KafkaMessage) -> None:
        if pb.DeadLetter.FromString(body).service == name:
            headers.append(dict(message.headers))

    async with TestKafkaBroker(broker) as test_broker:
        await test_broker.publish(raw, f"in-{name}", key=b"big")
    (letter,) = _letters(got)
    (body,) = got[DLQ]
    assert letter.error_type == "processing_error"
    assert len(body) <= 4096
    assert 0 < len(letter.value) < 2 * len(raw)
    assert headers[0][CUT_HEADER] == f"value {2 * len(raw)} B -> {len(letter.value)} B"
    assert "not replayable" in letter.reason


class RefusingPublisher:
    """A DLQ publisher that refuses what is over ``limit`` bytes, or everything with ``error``."""

    def __init__(self, limit: int = 10**9, error: Exception | None = None) -> None:
        self.limit, self.error = limit, error
        self.sent: list[tuple[bytes, dict[str, str]]] = []
        self.calls = 0

    async def publish(self, body: bytes, *, key: bytes | None, headers: dict[str, str]) -> None:
        self.calls += 1
        if self.error is not None:
            raise self.error
        if len(body) > self.limit:
            raise MessageSizeTooLargeError()
        self.sent.append((body, headers))


class BigRecord:
    topic, partition, offset, key = "t", 0, 5, b"case-1"
    headers = (("x-reag-type", b"Traffic"),)
    value = b"p" * 50_000


async def test_a_broker_limit_below_the_setting_cuts_again_then_strips_never_loops() -> None:
    poison = Poison("oversized", "too big")
    # The broker takes 3,000 bytes: the letter is cut to the setting, then to an eighth.
    smaller = RefusingPublisher(limit=3_000)
    assert await write(smaller, "svc", BigRecord(), poison, BigRecord.value, max_bytes=20_000) == (
        "written"
    )
    assert smaller.calls == 2
    ((body, headers),) = smaller.sent
    assert len(body) <= 3_000
    assert CUT_HEADER in headers

    # The broker takes almost nothing: a bare letter, then the event is given up, loudly.
    tiny = RefusingPublisher(limit=10)
    assert await write(tiny, "svc", BigRecord(), poison, BigRecord.value, max_bytes=20_000) == (
        "lost"
    )
    assert tiny.calls == 3

    # Refused for another reason that is not transient: a bare letter at once.
    other = RefusingPublisher(error=TypeError("cannot serialise"))
    assert await write(other, "svc", BigRecord(), poison, b"x", max_bytes=20_000) == "lost"
    assert other.calls == 2

    # A broker outage is transient: returned for the partition to wait, not counted as lost.
    away = RefusingPublisher(error=KafkaConnectionError())
    fault = await write(away, "svc", BigRecord(), poison, b"x", max_bytes=20_000)
    assert isinstance(fault, Transient)
    assert fault.kind == "broker"


# --- item 6: no exception message, stray header or long key in dead letters and logs -----


async def test_a_dead_letter_keeps_the_type_not_the_message_and_only_the_headers_replay_needs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    name = "privacy-kit"

    async def bug(event: pb.Traffic) -> None:
        raise KeyError(f"no entry for {CANARY}")

    broker, got, _ = service_under_test(name, bug)
    record_headers: list[dict[str, Any]] = []

    @broker.subscriber(DLQ, group_id="privacy-headers")
    async def keep(body: bytes, message: KafkaMessage) -> None:
        if pb.DeadLetter.FromString(body).service == name:
            record_headers.append(dict(message.headers))

    long_key = ("user-" + CANARY * 10).encode()
    with caplog.at_level(logging.DEBUG):
        async with TestKafkaBroker(broker) as test_broker:
            await test_broker.publish(
                traffic_bytes("p1"),
                f"in-{name}",
                key=long_key,
                headers={"x-user-email": CANARY, "x-reag-type": "Traffic"},
            )
    (letter,) = _letters(got)
    assert letter.error_type == "processing_error"
    assert "KeyError" in letter.reason
    assert CANARY not in letter.reason
    assert CANARY not in caplog.text
    assert "KeyError" in caplog.text  # the log names the type and has the frames
    assert "x-user-email" not in letter.headers
    assert set(letter.headers) <= KEPT_HEADERS
    assert letter.headers["x-reag-type"] == "Traffic"  # what replay's type check reads
    assert int(record_headers[0][DROPPED_HEADERS]) >= 1
    assert letter.key.startswith(b"sha256:")
    assert len(letter.key) == 7 + 64
    assert letter.value == traffic_bytes("p1")  # the original bytes, for replay


# --- item 7: the park is bounded by bytes ------------------------------------------------


async def test_the_park_is_bounded_by_bytes_and_a_full_park_pauses_the_partition() -> None:
    async def attempt(record: Any, may_park: bool) -> Any:
        return NotLoaded(record.app, "not loaded")

    settings = DeliverySettings(
        retry_initial_s=0.01, retry_max_s=0.05, park_s=5.0, park_max_bytes=100
    )
    tp = TopicPartition("t", 0)
    consumer = RecordingConsumer({tp})
    flow = Delivery("svc-park-bytes", "t", settings, attempt, never_gives_up)
    await flow.handle(Record(0, "late", size=60), consumer)  # an empty park takes any event
    assert await until(lambda: flow.parked == 1, 10)
    await flow.handle(Record(1, "late", size=60), consumer)  # 120 bytes would pass 100
    assert flow.parked_bytes <= 100
    assert await until(lambda: flow.paused == {tp}, 10)
    assert ("pause", 0) in consumer.calls
    flow.revoked({tp})
