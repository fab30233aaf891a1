"""The ledger service's wiring under FastStream's in-memory TestKafkaBroker."""

from __future__ import annotations

import grpc
import pytest
from faststream import TestApp
from faststream.kafka import KafkaBroker, TestKafkaBroker
from grpc_health.v1 import health_pb2, health_pb2_grpc

from reag.ledger.store import LedgerStore
from reag.v1 import api_pb2, api_pb2_grpc
from reag.v1 import events_pb2 as pb
from services.kit.topology import ABSTAINS, DLQ, ORACLES, RESULTS, REVIEWS, VERDICTS
from services.ledger.handlers import build_router
from services.ledger.main import create_app
from services.ledger.settings import LedgerSettings
from shell.stack.ports import free_port

from .conftest import NO, YES, Events


def test_settings_default_to_a_fixed_grpc_port() -> None:
    settings = LedgerSettings()
    assert settings.ledger_grpc_port == 50061
    assert settings.ledger_grpc_host == "127.0.0.1"


async def test_results_are_published_once_complete_and_again_on_change(sqlite_dsn: str) -> None:
    store = LedgerStore.open(sqlite_dsn)
    settings = LedgerSettings(topic_suffix="-t1")
    broker = KafkaBroker()
    broker.include_router(build_router(settings, store))
    published: list[pb.Result] = []
    letters: list[pb.DeadLetter] = []

    @broker.subscriber(RESULTS + "-t1")
    async def collect(body: bytes) -> None:
        published.append(pb.Result.FromString(body))

    @broker.subscriber(DLQ)
    async def collect_dlq(body: bytes) -> None:
        letters.append(pb.DeadLetter.FromString(body))

    ev = Events(n=2)
    async with TestKafkaBroker(broker) as test_broker:

        async def send(topic: str, event: pb.Verdict | pb.Abstain | pb.Review | pb.Oracle) -> None:
            await test_broker.publish(
                event.SerializeToString(), topic + "-t1", key=ev.case_id.encode()
            )

        await send(VERDICTS, ev.verdict(0, YES))
        assert published == []
        await send(ORACLES, ev.oracle())
        await send(ABSTAINS, ev.abstain(1))
        assert [r.outcome for r in published] == [pb.OUTCOME_ABSTAIN]
        await send(REVIEWS, ev.review(1, NO))
        assert [r.outcome for r in published] == [pb.OUTCOME_ABSTAIN, pb.OUTCOME_FAIL]
        await test_broker.publish(b"\x00garbage", VERDICTS + "-t1")
        assert [letter.error_type for letter in letters] == ["undecodable"]

    stored = store.get_result(ev.case_id)
    assert stored is not None
    assert stored.outcome == pb.OUTCOME_FAIL
    assert stored.query == "What should I eat tonight?"


async def test_the_app_serves_grpc_between_startup_and_shutdown(sqlite_dsn: str) -> None:
    store = LedgerStore.open(sqlite_dsn)
    ev = Events(n=1)
    store.record_verdict(ev.verdict(0, YES))
    port = free_port()
    app = create_app(LedgerSettings(ledger_grpc_port=port), store=store)
    address = f"127.0.0.1:{port}"
    assert isinstance(app.broker, KafkaBroker)
    async with TestKafkaBroker(app.broker), TestApp(app):
        async with grpc.aio.insecure_channel(address) as channel:
            result = await api_pb2_grpc.ResultsServiceStub(channel).GetResult(
                api_pb2.GetResultRequest(case_id=ev.case_id)
            )
            health = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest()
            )
        assert result.outcome == pb.OUTCOME_PASS
        assert health.status == health_pb2.HealthCheckResponse.SERVING
    async with grpc.aio.insecure_channel(address) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as gone:
            await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=2
            )
    assert gone.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
