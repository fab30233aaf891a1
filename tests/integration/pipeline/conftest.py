"""Shared pieces of the pipeline's real-broker tests: the example corpus and topic readers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from reag.corpus.loader import load_sources
from reag.corpus.manifest import load_manifest
from reag.corpus.model import Document
from services.kit.testing import read_values

EXAMPLE_MANIFEST = Path(__file__).parents[3] / "examples/nutrition/app.yaml"

Reader = Callable[..., Awaitable[list[bytes]]]


@pytest.fixture(scope="session")
def example_corpus() -> list[Document]:
    manifest = load_manifest(EXAMPLE_MANIFEST)
    return load_sources(manifest.corpus_paths(), manifest.name)


@pytest.fixture
def reader(kafka_bootstrap: str) -> Reader:
    async def read(
        topic: str, done: Callable[[list[bytes]], bool], timeout_s: float = 60.0
    ) -> list[bytes]:
        return await read_values(kafka_bootstrap, topic, done, timeout_s=timeout_s)

    return read
