"""``reag dlq`` streams the dead-letter topic: listing many large letters holds a few MiB,
not the topic (today's main read every letter, payload and all, into a list first)."""

from __future__ import annotations

import asyncio
import json
import tracemalloc

import pytest
from aiokafka import AIOKafkaProducer
from typer.testing import CliRunner

from reag.v1 import events_pb2 as pb
from services.kit.admin import ensure_topics
from services.kit.settings import KafkaSettings, ServiceSettings
from services.kit.topology import DLQ
from shell.cli.main import app as reag
from shell.kafka_io import dlq

# What the command imports lazily is imported here, so the measure is of the reading alone.
WARM = (dlq.stream_dead_letters, ServiceSettings)

pytestmark = [pytest.mark.kafka]

LETTERS = 32
PAYLOAD_BYTES = 400_000  # 12.8 MB of payloads in all
PEAK_LIMIT_BYTES = 8 * 1024 * 1024


async def test_listing_large_dead_letters_streams_in_bounded_memory(
    kafka_bootstrap: str, topic_suffix: str
) -> None:
    await ensure_topics(KafkaSettings(bootstrap_servers=kafka_bootstrap), topic_suffix)
    service = f"stream-{topic_suffix}"
    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
    await producer.start()
    try:
        for i in range(LETTERS):
            letter = pb.DeadLetter(
                service=service,
                topic="reag.traffic.v1" + topic_suffix,
                offset=i,
                key=f"case-{i}".encode(),
                value=bytes([i % 251]) * PAYLOAD_BYTES,
                reason="why",
                error_type="undecodable",
            )
            await producer.send_and_wait(DLQ, letter.SerializeToString(), key=letter.key)
    finally:
        await producer.stop()

    tracemalloc.start()
    try:
        listing = await asyncio.to_thread(
            CliRunner().invoke,
            reag,
            ["dlq", "list", "--service", service, "--bootstrap", kafka_bootstrap, "--json"],
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert listing.exit_code == 0, listing.output
    rows = json.loads(listing.output)
    assert len(rows) == LETTERS
    assert {row["size_bytes"] for row in rows} == {PAYLOAD_BYTES}
    assert peak < PEAK_LIMIT_BYTES, f"peak {peak / 2**20:.1f} MiB while listing"
