"""Shared pieces of the pipeline's real-broker tests: the example corpus and topic readers."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer

from reag.corpus.loader import load_sources
from reag.corpus.manifest import load_manifest
from reag.corpus.model import Document

EXAMPLE_MANIFEST = Path(__file__).parents[3] / "examples/nutrition/app.yaml"

Reader = Callable[..., Awaitable[list[bytes]]]


@pytest.fixture(scope="session")
def example_corpus() -> list[Document]:
    manifest = load_manifest(EXAMPLE_MANIFEST)
    return load_sources(manifest.corpus_paths(), manifest.name)


async def read_topic(
    bootstrap: str,
    topic: str,
    done: Callable[[list[bytes]], bool],
    *,
    timeout_s: float = 60.0,
) -> list[bytes]:
    """Everything on ``topic`` from the start, until ``done(values)`` or the timeout."""
    # No consumer group: every partition is read directly, with no join to wait for.
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id=None
    )
    await consumer.start()
    values: list[bytes] = []
    try:
        async with asyncio.timeout(timeout_s):
            while not done(values):
                batch = await consumer.getmany(timeout_ms=300)
                values += [r.value for records in batch.values() for r in records]
    except TimeoutError:
        pass
    finally:
        await consumer.stop()
    return values


@pytest.fixture
def reader(kafka_bootstrap: str) -> Reader:
    async def read(
        topic: str, done: Callable[[list[bytes]], bool], timeout_s: float = 60.0
    ) -> list[bytes]:
        return await read_topic(kafka_bootstrap, topic, done, timeout_s=timeout_s)

    return read
