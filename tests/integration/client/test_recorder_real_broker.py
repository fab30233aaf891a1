"""The recorder and ``reag traffic send`` over a real Kafka-protocol broker (Tansu, on a
socket): every recorded event arrives, keyed by case id, and no canary PII is in the bytes
that reached the broker."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import typer
from aiokafka import AIOKafkaConsumer
from typer.testing import CliRunner

from reag.client import Recorder
from reag.v1 import events_pb2 as pb
from shell.cli.traffic import register

pytestmark = [pytest.mark.kafka]

EMAIL = "jane.doe@example.com"
PHONE = "+44 20 7946 0958"
CARD = "4111 1111 1111 1111"  # Luhn-valid test number
CANARIES = (EMAIL.encode(), PHONE.encode(), CARD.encode(), b"4111111111111111", b"jane.doe")


async def read_records(
    bootstrap: str, topic: str, count: int, timeout_s: float = 30.0
) -> list[Any]:
    """Every record on ``topic`` (key, value and headers), until ``count`` or the time is up."""
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id=None
    )
    await consumer.start()
    records: list[Any] = []
    try:
        async with asyncio.timeout(timeout_s):
            while len(records) < count:
                batch = await consumer.getmany(timeout_ms=300)
                records += [r for rs in batch.values() for r in rs]
    except TimeoutError:
        pass
    finally:
        await consumer.stop()
    return records


def test_recorded_events_arrive_redacted(kafka_bootstrap: str, topic_suffix: str) -> None:
    topic = f"traffic-{topic_suffix}"
    with Recorder(bootstrap_servers=kafka_bootstrap, app="nutrition", topic=topic) as recorder:
        for i in range(20):
            assert recorder.record(
                query=f"Is cola OK? I'm {EMAIL}, call {PHONE}",
                response=f"Paid with {CARD}. Not on a renal diet.",
                profile={"email": EMAIL, "diet": "renal"},
                user_id=EMAIL if i % 2 else f"u-{i}",
                request_id=f"req-{i}",
                latency_s=0.1,
            )
        assert recorder.flush(30)
        stats = recorder.stats()
    assert (stats.recorded, stats.failed, stats.dropped_queue_full) == (20, 0, 0)

    records = asyncio.run(read_records(kafka_bootstrap, topic, 20))
    assert len(records) == 20
    for record in records:
        for canary in CANARIES:
            assert canary not in record.value
            assert canary not in (record.key or b"")
        event = pb.Traffic.FromString(record.value)
        assert record.key == event.meta.case_id.encode()
        assert dict(record.headers)["x-reag-type"] == b"Traffic"
        assert "[REDACTED:EMAIL]" in event.query
        assert "[REDACTED:CARD]" in event.actual_response
        assert event.meta.origin == pb.ORIGIN_LIVE
    assert sorted(pb.Traffic.FromString(r.value).request_id for r in records) == sorted(
        f"req-{i}" for i in range(20)
    )


def test_traffic_send_replays_a_log_onto_the_topic(
    kafka_bootstrap: str, topic_suffix: str, tmp_path: Path
) -> None:
    topic = f"replay-{topic_suffix}"
    path = tmp_path / "log.jsonl"
    rows = [{"q": f"question {i} from {EMAIL}", "a": f"answer {i}", "id": i} for i in range(5)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n{broken\n", encoding="utf-8")
    cli = typer.Typer()
    register(cli)
    result = CliRunner().invoke(
        cli,
        [
            "traffic",
            "send",
            str(path),
            "--app",
            "nutrition",
            "--map",
            "query=q",
            "--map",
            "response=a",
            "--map",
            "request_id=id",
            "--bootstrap",
            kafka_bootstrap,
            "--topic",
            topic,
            "--rate",
            "50",
            "--json",
        ],
    )
    report = json.loads(result.stdout)
    assert result.exit_code == 1  # the broken row
    assert (report["valid"], report["invalid"], report["recorded"], report["failed"]) == (
        5,
        1,
        5,
        0,
    )
    records = asyncio.run(read_records(kafka_bootstrap, topic, 5))
    assert sorted(pb.Traffic.FromString(r.value).request_id for r in records) == [
        str(i) for i in range(5)
    ]
    assert not [r for r in records if EMAIL.encode() in r.value]
