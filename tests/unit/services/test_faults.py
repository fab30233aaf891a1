"""Transient is not poison: the consume path's classification, retries, park and commits."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaConnectionError, KafkaTimeoutError, MessageSizeTooLargeError
from faststream.kafka import KafkaBroker, KafkaRouter, TestKafkaBroker
from prometheus_client import REGISTRY
from sqlalchemy import exc as sa_exc

from reag.llm.base import (
    BudgetExceededError,
    LLMTimeoutError,
    PermanentLLMError,
    RateLimitedError,
    StructuredOutputError,
    TransientLLMError,
)
from reag.v1 import events_pb2 as pb
from services.kit.codec import BadEventError
from services.kit.delivery import Delivery, Emit, backoff, consume
from services.kit.faults import (
    LLM_OUTPUT_EXCERPT_CHARS,
    AppNotLoadedError,
    NotLoaded,
    Poison,
    Transient,
    UndeclaredTopicError,
    classify,
)
from services.kit.settings import DeliverySettings
from services.kit.testing import until
from services.kit.topology import DLQ, ServiceSpec

FAST = DeliverySettings(retry_initial_s=0.01, retry_max_s=0.05, park_s=5.0)


def _operational(cause: BaseException) -> sa_exc.OperationalError:
    return sa_exc.OperationalError("INSERT ...", {"query": "secret user text"}, cause)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (_operational(psycopg.OperationalError("connection refused")), "database"),
        (_operational(sqlite3.OperationalError("database is locked")), "database"),
        (sqlite3.OperationalError("database is locked"), "database"),
        (psycopg.OperationalError("server closed the connection"), "database"),
        (sa_exc.TimeoutError("QueuePool limit reached"), "database"),
        (KafkaConnectionError("no broker"), "broker"),
        (KafkaTimeoutError(), "broker"),
        (RateLimitedError("429"), "llm"),
        (LLMTimeoutError("slow"), "llm"),
        (TransientLLMError("HTTP 500"), "llm"),
        (BudgetExceededError("spent"), "budget"),
        (ConnectionRefusedError("refused"), "network"),
    ],
)
def test_infrastructure_faults_are_transient(exc: BaseException, expected: str) -> None:
    fault = classify(exc)
    assert isinstance(fault, Transient)
    assert fault.kind == expected
    assert fault.error == type(exc).__name__  # what a log line may carry: no message


def test_a_driver_error_wrapped_by_the_core_library_is_still_transient() -> None:
    try:
        try:
            raise psycopg.OperationalError("connection refused")
        except psycopg.OperationalError as cause:
            raise RuntimeError("could not record the verdict") from cause
    except RuntimeError as wrapped:
        fault = classify(wrapped)
    assert fault == Transient("database", "RuntimeError")


@pytest.mark.parametrize(
    ("exc", "error_type"),
    [
        (BadEventError("undecodable", "bad bytes"), "undecodable"),
        (BadEventError("unknown_schema_version", "v7"), "unknown_schema_version"),
        (BadEventError("oversized", "too big"), "oversized"),
        (StructuredOutputError("still invalid after repair", raw="{oops"), "llm_output_invalid"),
        (PermanentLLMError("bad key"), "llm_error"),
        (MessageSizeTooLargeError(), "output_too_large"),
        (UndeclaredTopicError("x"), "processing_error"),
        (KeyError("a bug"), "processing_error"),
    ],
)
def test_poison_is_dead_lettered(exc: BaseException, error_type: str) -> None:
    fault = classify(exc)
    assert isinstance(fault, Poison)
    assert fault.error_type == error_type


def test_invalid_model_output_travels_in_a_header_and_an_unknown_app_parks() -> None:
    fault = classify(StructuredOutputError("invalid", raw="x" * 9000))
    assert isinstance(fault, Poison)
    assert fault.extra["x-reag-llm-output"] == "x" * LLM_OUTPUT_EXCERPT_CHARS
    parked = classify(AppNotLoadedError("late"))
    assert isinstance(parked, NotLoaded)
    assert "reag dlq replay --reason app_not_loaded" in parked.reason


def test_backoff_doubles_up_to_its_cap() -> None:
    delay = backoff(DeliverySettings(retry_initial_s=1.0, retry_max_s=10.0))
    for attempt, low in ((1, 1.0), (2, 2.0), (3, 4.0)):
        assert low <= delay(attempt) <= low + 0.5
    assert delay(20) == 10.0


# --- under FastStream's TestKafkaBroker -------------------------------------------------


def traffic_bytes(case: str, app: str = "demo") -> bytes:
    event = pb.Traffic(query="q", actual_response="r")
    event.meta.case_id, event.meta.app, event.meta.schema_version = case, app, 1
    return event.SerializeToString()


def service_under_test(
    name: str,
    handler: Callable[[pb.Traffic], Any],
    *,
    app_known: Callable[[str], bool] | None = None,
    delivery: DeliverySettings = FAST,
    scrub: Callable[[bytes], bytes] | None = None,
) -> tuple[KafkaBroker, dict[str, list[bytes]], dict[str, Delivery]]:
    inp, out = f"in-{name}", f"out-{name}"
    spec = ServiceSpec(name, consumes=(inp,), produces=(out,))
    router = KafkaRouter()
    flows: dict[str, Delivery] = {}

    @consume(
        router,
        spec,
        inp,
        pb.Traffic,
        max_event_bytes=4096,
        app_known=app_known,
        scrub=scrub,
        delivery=delivery,
        registry=flows,
    )
    async def to_intention(event: pb.Traffic) -> Emit:
        await handler(event)
        intention = pb.Intention(query=event.query)
        intention.meta.CopyFrom(event.meta)
        return Emit(out, intention, event.meta.case_id)

    broker = KafkaBroker()
    broker.include_router(router)
    got: dict[str, list[bytes]] = {out: [], DLQ: []}

    @broker.subscriber(out, group_id="sink-out")
    async def keep_out(body: bytes) -> None:
        got[out].append(body)

    @broker.subscriber(DLQ, group_id="sink-dlq")
    async def keep_dlq(body: bytes) -> None:
        if pb.DeadLetter.FromString(body).service == name:
            got[DLQ].append(body)

    return broker, got, flows


def _retries(service: str, kind: str) -> float:
    value = REGISTRY.get_sample_value(
        "reag_transient_retries_total", {"service": service, "topic": f"in-{service}", "kind": kind}
    )
    return value or 0.0


@pytest.mark.parametrize(
    "fault",
    [
        _operational(psycopg.OperationalError("connection refused")),
        RateLimitedError("429 after the LLM layer's own retries"),
        BudgetExceededError("spent"),
        KafkaConnectionError("broker away"),
    ],
    ids=["database", "llm", "budget", "broker"],
)
async def test_a_transient_fault_waits_and_retries_and_never_dead_letters(
    fault: Exception,
) -> None:
    name = f"transient-{type(fault).__name__}"
    failures = {"left": 3}

    async def flaky(event: pb.Traffic) -> None:
        if failures["left"]:
            failures["left"] -= 1
            raise fault

    broker, got, _ = service_under_test(name, flaky)
    kind = classify(fault)
    assert isinstance(kind, Transient)
    before = _retries(name, kind.kind)
    async with TestKafkaBroker(broker) as test_broker:
        await test_broker.publish(traffic_bytes("c1"), f"in-{name}", key=b"c1")
    assert [pb.Intention.FromString(v).meta.case_id for v in got[f"out-{name}"]] == ["c1"]
    assert got[DLQ] == []
    assert _retries(name, kind.kind) - before == 3


async def test_an_event_of_an_app_not_loaded_parks_without_blocking_other_apps() -> None:
    loaded = {"demo"}
    name = "park"

    async def ok(event: pb.Traffic) -> None:
        return None

    broker, got, flows = service_under_test(name, ok, app_known=lambda app: app in loaded)
    async with TestKafkaBroker(broker) as test_broker:
        for case, app in (("l1", "late"), ("d1", "demo"), ("l2", "late"), ("d2", "demo")):
            await test_broker.publish(traffic_bytes(case, app), f"in-{name}", key=case.encode())
        flow = flows[f"in-{name}"]
        cases = [pb.Intention.FromString(v).meta.case_id for v in got[f"out-{name}"]]
        assert cases == ["d1", "d2"]  # the other app's events were not held back
        assert flow.parked == 2
        loaded.add("late")  # the corpus appears
        assert await until(lambda: not flow.parked, 30)
    cases = [pb.Intention.FromString(v).meta.case_id for v in got[f"out-{name}"]]
    assert sorted(cases) == ["d1", "d2", "l1", "l2"]
    assert got[DLQ] == []


async def test_a_parked_event_is_dead_lettered_as_app_not_loaded_when_its_time_is_up() -> None:
    name = "park-expiry"

    async def ok(event: pb.Traffic) -> None:
        return None

    delivery = DeliverySettings(retry_initial_s=0.01, retry_max_s=0.05, park_s=0.3)
    broker, got, flows = service_under_test(
        name, ok, app_known=lambda app: False, delivery=delivery
    )
    async with TestKafkaBroker(broker) as test_broker:
        await test_broker.publish(traffic_bytes("n1", "never"), f"in-{name}", key=b"n1")
        assert await until(lambda: bool(got[DLQ]), 30)
    (letter,) = [pb.DeadLetter.FromString(v) for v in got[DLQ]]
    assert letter.error_type == "app_not_loaded"
    assert letter.value == traffic_bytes("n1", "never")
    assert flows[f"in-{name}"].parked == 0
    assert got[f"out-{name}"] == []


# --- the real consumer's moves: seek, pause, resume, prefix commits ---------------------


class RecordingConsumer(AIOKafkaConsumer):  # type: ignore[misc]
    """An aiokafka consumer that is never started: it records what the consume path asks."""

    def __init__(self, partitions: set[TopicPartition]) -> None:  # no super(): no client
        self.owned = partitions
        self.calls: list[tuple[str, Any]] = []
        self._closed = False

    def __del__(self) -> None:  # nothing was started, so nothing to warn about
        return None

    def assignment(self) -> set[TopicPartition]:
        return set(self.owned)

    def seek(self, partition: TopicPartition, offset: int) -> None:
        self.calls.append(("seek", offset))

    def pause(self, *partitions: TopicPartition) -> None:
        self.calls.append(("pause", partitions[0].partition))

    def resume(self, *partitions: TopicPartition) -> None:
        self.calls.append(("resume", partitions[0].partition))

    async def commit(self, offsets: dict[TopicPartition, int] | None = None) -> None:
        assert offsets is not None
        self.calls.append(("commit", next(iter(offsets.values()))))


class Record:
    def __init__(self, offset: int, app: str, *, partition: int = 0, size: int = 10) -> None:
        self.topic, self.partition, self.offset, self.app = "t", partition, offset, app
        self.key, self.value, self.headers = b"k", b"v" * size, ()


async def never_gives_up(record: Any, poison: Poison) -> Any:
    raise AssertionError(f"no event here may exhaust its transient tries ({poison.reason})")


def _commits(consumer: RecordingConsumer) -> list[int]:
    return [arg for call, arg in consumer.calls if call == "commit"]


async def test_commits_stop_at_the_first_parked_offset_and_a_fault_pauses_without_a_seek() -> None:
    loaded = {"demo"}
    down = {"db": False}

    async def attempt(record: Any, may_park: bool) -> Any:
        if down["db"]:
            return Transient("database", "OperationalError")
        if record.app not in loaded:
            return NotLoaded(record.app, "not loaded") if may_park else "dead_lettered"
        return "processed"

    tp = TopicPartition("t", 0)
    consumer = RecordingConsumer({tp})
    flow = Delivery("svc", "t", FAST, attempt, never_gives_up)
    await flow.handle(Record(0, "demo"), consumer)
    await flow.handle(Record(1, "late"), consumer)  # parked
    await flow.handle(Record(2, "demo"), consumer)
    assert await until(lambda: flow.in_flight == 0, 10)
    assert _commits(consumer) == [1]  # offset 1 is parked: nothing past it is committed

    down["db"] = True
    await flow.handle(Record(3, "demo"), consumer)
    assert await until(lambda: flow.paused == {tp}, 10)
    assert ("pause", 0) in consumer.calls
    # The consumer's position is already past offset 3: the event is tried again in its
    # own task, not sought back and redelivered.
    assert not [call for call in consumer.calls if call[0] == "seek"]
    assert flow.in_flight == 1

    down["db"] = False
    assert await until(lambda: flow.in_flight == 0 and not flow.paused, 10)
    assert ("resume", 0) in consumer.calls
    assert _commits(consumer) == [1]
    loaded.add("late")
    assert await until(lambda: not flow.parked, 10)
    assert _commits(consumer) == [1, 4]


async def test_a_revoked_partition_forgets_its_parked_events() -> None:
    async def attempt(record: Any, may_park: bool) -> Any:
        return NotLoaded(record.app, "not loaded")

    tp = TopicPartition("t", 0)
    consumer = RecordingConsumer({tp})
    flow = Delivery("svc-revoke", "t", FAST, attempt, never_gives_up)
    await flow.handle(Record(5, "late"), consumer)
    assert await until(lambda: flow.parked == 1, 10)
    flow.revoked({tp})
    assert flow.parked == 0
    exits = REGISTRY.get_sample_value(
        "reag_park_exits_total", {"service": "svc-revoke", "topic": "t", "outcome": "revoked"}
    )
    assert exits == 1.0
