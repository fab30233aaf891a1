"""The gRPC ResultsService and health service, round trip through a real in-process server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from reag.ledger.api import SERVICE_NAME, ResultsServer, ServerNotStartedError
from reag.ledger.store import LedgerStore
from reag.v1 import api_pb2, api_pb2_grpc
from reag.v1 import events_pb2 as pb

from .conftest import NO, TIER_COSTS, YES, Events


@pytest.fixture
def filled(sqlite_dsn: str) -> LedgerStore:
    store = LedgerStore.open(sqlite_dsn)
    for n in range(5):
        ev = Events(f"nutrition-{n}", run_id="r1" if n < 4 else "r2", n=2)
        store.record_oracle(ev.oracle())
        store.record_verdict(ev.verdict(0, YES, tier=1))
        if n == 0:
            store.record_verdict(ev.verdict(1, NO, tier=3))
        elif n == 1:
            store.record_abstain(ev.abstain(1))
        else:
            store.record_verdict(ev.verdict(1, YES, tier=2))
    return store


@pytest.fixture
async def server(filled: LedgerStore) -> AsyncIterator[ResultsServer]:
    running = ResultsServer(filled, port=0)
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


async def test_results_round_trip(server: ResultsServer) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = api_pb2_grpc.ResultsServiceStub(channel)
        result = await stub.GetResult(api_pb2.GetResultRequest(case_id="nutrition-0"))
        assert result.outcome == pb.OUTCOME_FAIL
        assert result.total_cost_usd == pytest.approx(TIER_COSTS[0] + sum(TIER_COSTS))

        with pytest.raises(grpc.aio.AioRpcError) as missing:
            await stub.GetResult(api_pb2.GetResultRequest(case_id="nope"))
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND

        first = await stub.ListResults(api_pb2.ListResultsRequest(run_id="r1", limit=3))
        second = await stub.ListResults(
            api_pb2.ListResultsRequest(run_id="r1", limit=3, page_token=first.next_page_token)
        )
        assert [r.meta.case_id for r in first.results] == [f"nutrition-{n}" for n in range(3)]
        assert [r.meta.case_id for r in second.results] == ["nutrition-3"]
        assert second.next_page_token == ""
        abstained = await stub.ListResults(api_pb2.ListResultsRequest(outcome=pb.OUTCOME_ABSTAIN))
        assert [r.meta.case_id for r in abstained.results] == ["nutrition-1"]

        with pytest.raises(grpc.aio.AioRpcError) as bad_token:
            await stub.ListResults(api_pb2.ListResultsRequest(page_token="x"))
        assert bad_token.value.code() == grpc.StatusCode.INVALID_ARGUMENT

        summary = await stub.GetSummary(api_pb2.GetSummaryRequest(run_id="r1"))
        assert (summary.cases, summary.passed, summary.failed, summary.abstained) == (4, 2, 1, 1)
        assert (summary.criteria, summary.criteria_accepted) == (8, 7)
        assert summary.coverage == pytest.approx(7 / 8)
        tiers = {t.tier: t for t in summary.tiers}
        # tier 1 saw all 8 criteria: 4 accepted there, 4 escalated (2 to tier 2 and 2 to 3)
        assert (tiers[1].requests, tiers[1].accepted, tiers[1].escalated) == (8, 4, 4)
        assert (tiers[3].requests, tiers[3].accepted, tiers[3].abstained) == (2, 1, 1)
        assert tiers[3].cost_usd == pytest.approx(2 * TIER_COSTS[2])


async def test_health_reports_serving_for_the_server_and_the_results_service(
    server: ResultsServer,
) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for name in ("", SERVICE_NAME):
            reply = await health.Check(health_pb2.HealthCheckRequest(service=name))
            assert reply.status == health_pb2.HealthCheckResponse.SERVING


async def test_port_is_unknown_until_started_and_after_stop(filled: LedgerStore) -> None:
    running = ResultsServer(filled)
    with pytest.raises(ServerNotStartedError):
        _ = running.port
    await running.start()
    port = running.port
    await running.stop()
    with pytest.raises(ServerNotStartedError):
        _ = running.port
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = api_pb2_grpc.ResultsServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as gone:
            await stub.GetSummary(api_pb2.GetSummaryRequest(), timeout=2)
        assert gone.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
