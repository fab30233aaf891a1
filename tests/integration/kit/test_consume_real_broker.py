"""The guarded consume path over a real Kafka-protocol broker (Tansu, on a socket)."""

from __future__ import annotations

import pytest
from aiokafka import AIOKafkaProducer
from faststream.kafka import KafkaRouter
from prometheus_client import REGISTRY

from reag.v1 import events_pb2 as pb
from services.kit.broker import make_broker
from services.kit.delivery import Emit, consume
from services.kit.settings import DeliverySettings, KafkaSettings
from services.kit.testing import read_values
from services.kit.topology import DLQ, ServiceSpec

pytestmark = [pytest.mark.kafka]


def traffic(case: str, *, app: str = "demo", version: int = 1, query: str = "q") -> bytes:
    event = pb.Traffic(query=query, actual_response="r")
    event.meta.case_id, event.meta.app, event.meta.schema_version = case, app, version
    return event.SerializeToString()


async def test_bad_inputs_reach_the_dlq_and_the_next_good_event_flows(
    kafka_bootstrap: str, topic_suffix: str
) -> None:
    inp, out = f"in-{topic_suffix}", f"out-{topic_suffix}"
    service = f"svc-{topic_suffix}"
    spec = ServiceSpec(service, consumes=(inp,), produces=(out,))
    router = KafkaRouter()

    @consume(
        router,
        spec,
        inp,
        pb.Traffic,
        max_event_bytes=2048,
        app_known=lambda app: app == "demo",
        delivery=DeliverySettings(park_s=0),  # no park: an unknown app's event goes at once
    )
    async def to_intention(event: pb.Traffic) -> Emit:
        intention = pb.Intention(query=event.query)
        intention.meta.CopyFrom(event.meta)
        return Emit(out, intention, event.meta.case_id)

    broker = make_broker(KafkaSettings(bootstrap_servers=kafka_bootstrap), service)
    broker.include_router(router)
    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
    await producer.start()
    inputs = [
        traffic("c1"),
        b"\xff\xfe not protobuf",
        pb.Traffic(query="no meta").SerializeToString(),
        traffic("c3", query="x" * 5000),
        traffic("c4", version=7),
        traffic("c5", app="nobody"),
        traffic("c6"),
    ]
    for value in inputs:
        await producer.send_and_wait(inp, value, key=b"k")
    await producer.stop()

    async with broker:
        await broker.start()
        outputs = await read_values(kafka_bootstrap, out, lambda vs: len(vs) >= 2)

        def five_of_mine(values: list[bytes]) -> bool:
            return sum(pb.DeadLetter.FromString(v).service == service for v in values) >= 5

        letters_raw = await read_values(kafka_bootstrap, DLQ, five_of_mine)

    intentions = [pb.Intention.FromString(v) for v in outputs]
    assert [i.meta.case_id for i in intentions] == ["c1", "c6"]
    letters = [pb.DeadLetter.FromString(v) for v in letters_raw]
    mine = [letter for letter in letters if letter.service == service]
    assert [letter.error_type for letter in mine] == [
        "undecodable",
        "missing_field",
        "oversized",
        "unknown_schema_version",
        "app_not_loaded",
    ]
    assert all(letter.topic == inp for letter in mine)
    assert mine[0].value == inputs[1]  # original bytes kept
    assert "meta" in mine[1].reason
    assert [letter.offset for letter in mine] == [1, 2, 3, 4, 5]
    partition = str(mine[0].partition)
    lag = REGISTRY.get_sample_value(
        "reag_consumer_lag_messages", {"service": service, "topic": inp, "partition": partition}
    )
    assert lag == 0.0  # every input was consumed; the gauge saw the partition's end
