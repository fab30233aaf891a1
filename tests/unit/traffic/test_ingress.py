"""``reag.v1.TrafficService`` (``reag.traffic.ingress``) over a real in-process gRPC server,
with a fake producer; no broker.

The producer records what reached "the broker", so the tests can check the
produced bytes themselves: that redaction ran before them, that the key is the
case id, and that a broker fault is UNAVAILABLE rather than a silent drop.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from bench.redaction import MIB, PATHOLOGICAL
from reag.ids import case_id_for
from reag.ledger.api import ResultsServer
from reag.ledger.store import LedgerStore
from reag.traffic.ingress import SERVICE_NAME, RefusedError, TrafficIngress, max_receive_bytes
from reag.traffic.redaction import Redactor
from reag.v1 import api_pb2, api_pb2_grpc
from reag.v1 import events_pb2 as pb
from tests.cpu_bound import within_cpu

CANARY = "canary.7f3a9c@example.com"
APP = "nutrition"
TOPIC = "reag.traffic.v1-t1"


class BrokerDownError(ConnectionError):
    """What a producer raises when no broker acknowledges."""


@dataclass
class FakeProducer:
    """Records (topic, value, key) per acknowledged event; ``down`` makes every send fail."""

    sent: list[tuple[str, bytes, bytes]] = field(default_factory=list)
    down: bool = False
    fail_after: int | None = None

    async def __call__(self, topic: str, value: bytes, key: bytes) -> None:
        if self.down or (self.fail_after is not None and len(self.sent) >= self.fail_after):
            raise BrokerDownError("no broker acknowledged")
        self.sent.append((topic, value, key))

    def events(self) -> list[pb.Traffic]:
        return [pb.Traffic.FromString(value) for _, value, _ in self.sent]


@pytest.fixture
def sqlite_dsn(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'reag.db'}"


@pytest.fixture
def producer() -> FakeProducer:
    return FakeProducer()


@pytest.fixture
async def server(sqlite_dsn: str, producer: FakeProducer) -> AsyncIterator[ResultsServer]:
    servicer = TrafficIngress(
        produce=producer,
        redactor_for=lambda _app: Redactor(),
        app_known=lambda app: app == APP,
        topic=TOPIC,
        max_event_bytes=4096,
        clock=lambda: 1_767_225_600.0,
    )
    running = ResultsServer(LedgerStore.open(sqlite_dsn))
    running.add_service(
        SERVICE_NAME, lambda s: api_pb2_grpc.add_TrafficServiceServicer_to_server(servicer, s)
    )
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


@pytest.fixture
async def stub(server: ResultsServer) -> AsyncIterator[api_pb2_grpc.TrafficServiceStub]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        yield api_pb2_grpc.TrafficServiceStub(channel)


def submit(query: str = "Is this cereal ok for me?", **fields: object) -> api_pb2.SubmitRequest:
    traffic = pb.Traffic(
        query=query,
        actual_response="It has 22 g of sugar per serving; pick a lower one.",
        request_id=str(fields.pop("request_id", "req-1")),
        **fields,  # type: ignore[arg-type]
    )
    return api_pb2.SubmitRequest(app=APP, traffic=traffic)


async def test_submit_redacts_before_producing_and_sets_the_live_meta(
    stub: api_pb2_grpc.TrafficServiceStub, producer: FakeProducer
) -> None:
    request = submit(
        f"I am {CANARY}, is this cereal ok?",
        profile=pb.UserProfile(user_id=CANARY, attributes={"contact": CANARY}),
    )
    reply = await stub.Submit(request)

    assert reply.accepted
    assert reply.case_id == case_id_for(APP, "req-1")
    [(topic, value, key)] = producer.sent
    assert topic == TOPIC
    assert key == reply.case_id.encode()
    assert CANARY.encode() not in value
    assert b"example.com" not in value
    [event] = producer.events()
    assert event.query == "I am [REDACTED:EMAIL], is this cereal ok?"
    assert event.profile.user_id.startswith("user-")
    assert event.meta.case_id == reply.case_id
    assert event.meta.app == APP
    assert event.meta.origin == pb.ORIGIN_LIVE
    assert event.meta.schema_version == pb.SCHEMA_VERSION_1
    assert event.meta.created_at.seconds == 1_767_225_600


async def test_a_retry_with_the_same_request_id_keeps_its_case_and_a_client_time_is_kept(
    stub: api_pb2_grpc.TrafficServiceStub, producer: FakeProducer
) -> None:
    request = submit()
    request.traffic.meta.created_at.FromSeconds(1_700_000_000)
    request.traffic.meta.origin = pb.ORIGIN_SYNTHETIC  # reag decides the origin, not the client
    first = await stub.Submit(request)
    second = await stub.Submit(request)
    assert first.case_id == second.case_id
    assert [e.meta.created_at.seconds for e in producer.events()] == [1_700_000_000] * 2
    assert {e.meta.origin for e in producer.events()} == {pb.ORIGIN_LIVE}


async def test_a_request_without_an_id_gets_one_from_its_content_user_and_time(
    stub: api_pb2_grpc.TrafficServiceStub, producer: FakeProducer
) -> None:
    """A retry after an uncertain ack merges with the first call; a genuine repeat does not."""
    request = submit(profile=pb.UserProfile(user_id="u-1"))
    request.traffic.request_id = ""
    request.traffic.meta.created_at.FromSeconds(1_700_000_000)
    first = await stub.Submit(request)
    retry = await stub.Submit(request)
    request.traffic.meta.created_at.FromSeconds(1_700_000_060)
    repeat = await stub.Submit(request)
    request.traffic.meta.created_at.FromSeconds(1_700_000_000)
    request.traffic.profile.user_id = "u-2"
    other_user = await stub.Submit(request)
    assert first.case_id == retry.case_id
    assert len({first.case_id, repeat.case_id, other_user.case_id}) == 3
    event = producer.events()[0]
    assert event.request_id
    assert first.case_id == case_id_for(APP, event.request_id)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda r: setattr(r.traffic, "query", "   "), "traffic.query is empty"),
        (lambda r: setattr(r.traffic, "actual_response", ""), "traffic.actual_response is empty"),
        (lambda r: setattr(r, "app", ""), "app is required"),
        (lambda r: setattr(r.traffic, "response_latency_s", -1.0), "response_latency_s"),
        (lambda r: setattr(r.traffic, "situation", "x" * 5000), "over the 4096-byte limit"),
    ],
)
async def test_what_the_pipeline_would_dead_letter_is_invalid_argument(
    stub: api_pb2_grpc.TrafficServiceStub,
    producer: FakeProducer,
    change: object,
    reason: str,
) -> None:
    request = submit(f"from {CANARY}")
    change(request)  # type: ignore[operator]
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.Submit(request)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert reason in (refused.value.details() or "")
    assert CANARY not in (refused.value.details() or "")
    assert producer.sent == []


async def test_an_app_with_no_corpus_is_failed_precondition(
    stub: api_pb2_grpc.TrafficServiceStub, producer: FakeProducer
) -> None:
    request = submit()
    request.app = "unheard-of"
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.Submit(request)
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "reag corpus add" in (refused.value.details() or "")
    assert producer.sent == []


async def test_a_broker_fault_is_unavailable_so_the_client_retries(
    stub: api_pb2_grpc.TrafficServiceStub, producer: FakeProducer
) -> None:
    producer.down = True
    with pytest.raises(grpc.aio.AioRpcError) as down:
        await stub.Submit(submit())
    assert down.value.code() == grpc.StatusCode.UNAVAILABLE
    assert case_id_for(APP, "req-1") in (down.value.details() or "")
    producer.down = False
    assert (await stub.Submit(submit())).accepted


async def test_a_stream_is_summarised_and_a_bad_exchange_costs_only_itself(
    stub: api_pb2_grpc.TrafficServiceStub, producer: FakeProducer
) -> None:
    def requests() -> Iterator[api_pb2.SubmitRequest]:
        yield submit(request_id="s-1")
        yield submit("", request_id="s-2")
        yield submit(f"mail {CANARY}", request_id="s-3")
        yield submit(request_id="s-4")

    summary = await stub.SubmitStream(requests())

    assert (summary.received, summary.accepted, summary.refused) == (4, 3, 1)
    assert [(r.accepted, r.case_id) for r in summary.results] == [
        (True, case_id_for(APP, "s-1")),
        (False, ""),
        (True, case_id_for(APP, "s-3")),
        (True, case_id_for(APP, "s-4")),
    ]
    assert summary.results[1].reason == "traffic.query is empty"
    assert [key for _, _, key in producer.sent] == [
        case_id_for(APP, f"s-{n}").encode() for n in (1, 3, 4)
    ]
    assert all(CANARY.encode() not in value for _, value, _ in producer.sent)


async def test_a_broker_fault_mid_stream_is_answered_per_item(
    stub: api_pb2_grpc.TrafficServiceStub, producer: FakeProducer
) -> None:
    producer.fail_after = 1
    summary = await stub.SubmitStream(
        iter([submit(request_id="a"), submit("", request_id="b"), submit(request_id="c")])
    )
    assert (summary.received, summary.accepted, summary.refused, summary.unavailable) == (
        3,
        1,
        2,
        1,
    )
    assert [(r.accepted, r.retry, r.case_id) for r in summary.results] == [
        (True, False, case_id_for(APP, "a")),
        (False, False, ""),
        (False, True, case_id_for(APP, "c")),
    ]
    assert len(producer.sent) == 1


async def test_after_a_fault_the_rest_of_the_stream_is_not_attempted(
    stub: api_pb2_grpc.TrafficServiceStub, producer: FakeProducer
) -> None:
    producer.down = True
    summary = await stub.SubmitStream(iter([submit(request_id="a"), submit(request_id="b")]))
    assert [r.retry for r in summary.results] == [True, True]
    assert summary.unavailable == 2
    producer.down = False
    assert producer.sent == []


async def test_health_reports_the_traffic_service(server: ResultsServer) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=SERVICE_NAME)
        )
    assert reply.status == health_pb2.HealthCheckResponse.SERVING
    with pytest.raises(RuntimeError, match="before the results server starts"):
        server.add_service("late", lambda _s: None)


class SpyRedactor(Redactor):
    """Counts the events it was asked to redact."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def traffic(
        self, event: pb.Traffic, *, where: str | None = None
    ) -> tuple[pb.Traffic, Counter[str]]:
        self.calls += 1
        return super().traffic(event, where=where)


def test_the_size_is_checked_before_any_pattern_runs() -> None:
    spy = SpyRedactor()
    ingress = TrafficIngress(
        produce=FakeProducer(),
        redactor_for=lambda _app: spy,
        app_known=lambda _app: True,
        topic=TOPIC,
        max_event_bytes=4096,
    )
    with pytest.raises(RefusedError, match="over the 4096-byte limit") as refused:
        ingress.prepare(submit("a" * 5000 + "@"))
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert spy.calls == 0


def test_a_mib_of_pathological_text_within_the_limit_is_prepared_in_bounded_cpu() -> None:
    ingress = TrafficIngress(
        produce=FakeProducer(),
        redactor_for=lambda _app: Redactor(),
        app_known=lambda _app: True,
        topic=TOPIC,
        max_event_bytes=2 * MIB,
    )
    for family in ("email", "card_spaced", "invisible"):
        with within_cpu(f"Submit of 1 MiB of {family}"):
            ingress.prepare(submit(PATHOLOGICAL[family](MIB)))


async def test_grpc_refuses_a_message_far_over_the_limit_before_reading_it(
    sqlite_dsn: str,
) -> None:
    producer = FakeProducer()
    servicer = TrafficIngress(
        produce=producer,
        redactor_for=lambda _app: Redactor(),
        app_known=lambda _app: True,
        topic=TOPIC,
        max_event_bytes=4096,
    )
    server = ResultsServer(LedgerStore.open(sqlite_dsn), max_receive_bytes=max_receive_bytes(4096))
    server.add_service(
        SERVICE_NAME, lambda s: api_pb2_grpc.add_TrafficServiceServicer_to_server(servicer, s)
    )
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await api_pb2_grpc.TrafficServiceStub(channel).Submit(submit("q" * 200_000))
    finally:
        await server.stop()
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert producer.sent == []
