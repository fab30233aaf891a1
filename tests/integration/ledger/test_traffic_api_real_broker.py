"""``TrafficService.SubmitStream`` onto ``reag.traffic.v1`` of a real Kafka-protocol broker (Tansu).

The same servicer the ledger serves, producing with the ledger's own broker
(acks=all), behind a bearer token; the events are read back off the topic.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from reag.ids import case_id_for
from reag.ledger.api import ResultsServer
from reag.ledger.store import LedgerStore
from reag.traffic.ingress import SERVICE_NAME
from reag.traffic.redaction import Redactor
from reag.v1 import api_pb2, api_pb2_grpc
from reag.v1 import events_pb2 as pb
from services.kit.admin import ensure_topics
from services.kit.broker import make_broker
from services.kit.settings import KafkaSettings
from services.kit.testing import read_events
from services.kit.topology import TRAFFIC
from services.ledger.traffic_api import broker_producer, traffic_ingress

pytestmark = [pytest.mark.kafka]

APP = "nutrition"
TOKEN = "integration-token"
CANARY = "canary.real-broker@example.com"


def _requests(run: str, n: int) -> Iterator[api_pb2.SubmitRequest]:
    for i in range(n):
        yield api_pb2.SubmitRequest(
            app=APP,
            traffic=pb.Traffic(
                request_id=f"{run}-{i}",
                query=f"Question {i} from {CANARY}: is this cereal ok?",
                actual_response="It has 22 g of sugar per serving.",
                response_latency_s=0.4,
            ),
        )


async def test_a_streamed_submit_lands_on_the_traffic_topic(
    kafka_bootstrap: str, tmp_path: Path, topic_suffix: str
) -> None:
    kafka = KafkaSettings(bootstrap_servers=kafka_bootstrap)
    await ensure_topics(kafka, topic_suffix)
    broker = make_broker(kafka, "ledger")
    servicer = traffic_ingress(
        produce=broker_producer(broker),
        redactor_for=lambda _app: Redactor(),
        app_known=lambda app: app == APP,
        topic_suffix=topic_suffix,
    )
    server = ResultsServer(LedgerStore.open(f"sqlite:///{tmp_path / 'ledger.db'}"), token=TOKEN)
    server.add_service(
        SERVICE_NAME, lambda s: api_pb2_grpc.add_TrafficServiceServicer_to_server(servicer, s)
    )
    run = uuid.uuid4().hex[:8]
    async with broker:
        await broker.connect()
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                summary = await api_pb2_grpc.TrafficServiceStub(channel).SubmitStream(
                    _requests(run, 4), metadata=(("authorization", f"Bearer {TOKEN}"),)
                )
        finally:
            await server.stop()

    expected = [case_id_for(APP, f"{run}-{i}") for i in range(4)]
    assert (summary.received, summary.accepted, summary.refused) == (4, 4, 0)
    assert [r.case_id for r in summary.results] == expected
    # Acknowledged before the summary was sent, so the events are already on the topic.
    events = await read_events(
        kafka_bootstrap, TRAFFIC + topic_suffix, pb.Traffic, lambda es: len(es) >= 4
    )
    assert sorted(e.meta.case_id for e in events) == sorted(expected)
    assert {e.meta.origin for e in events} == {pb.ORIGIN_LIVE}
    assert all(CANARY not in e.query and "[REDACTED:EMAIL]" in e.query for e in events)


async def test_submit_before_the_broker_is_connected_is_unavailable(
    tmp_path: Path,
) -> None:
    """The ledger's gRPC port opens before its broker connects; a Submit then must be retried."""
    broker = make_broker(KafkaSettings(bootstrap_servers="127.0.0.1:1"), "ledger")
    servicer = traffic_ingress(
        produce=broker_producer(broker),
        redactor_for=lambda _app: Redactor(),
        app_known=lambda _app: True,
    )
    server = ResultsServer(LedgerStore.open(f"sqlite:///{tmp_path / 'ledger.db'}"))
    server.add_service(
        SERVICE_NAME, lambda s: api_pb2_grpc.add_TrafficServiceServicer_to_server(servicer, s)
    )
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            with pytest.raises(grpc.aio.AioRpcError) as down:
                await api_pb2_grpc.TrafficServiceStub(channel).Submit(
                    next(_requests("early", 1)), timeout=10
                )
            # A stream is answered per exchange: each one to send again, none lost unsaid.
            summary = await api_pb2_grpc.TrafficServiceStub(channel).SubmitStream(
                _requests("early", 2), timeout=20
            )
    finally:
        await server.stop()
    assert down.value.code() == grpc.StatusCode.UNAVAILABLE
    assert (summary.received, summary.accepted, summary.unavailable) == (2, 0, 2)
    assert all(r.retry and r.case_id for r in summary.results)
