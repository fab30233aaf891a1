"""The real local model's client and engine, shared by the LLM integration tests."""

from __future__ import annotations

import pytest

from reag.llm import LLMClient
from reag.llm.llama_engine import LlamaEngine
from reag.llm.local import LocalProvider


@pytest.fixture(scope="module")
def client(local_llm_client: object) -> LLMClient:
    assert isinstance(local_llm_client, LLMClient)
    return local_llm_client


@pytest.fixture(scope="module")
def engine(client: LLMClient) -> LlamaEngine:
    assert isinstance(client.provider, LocalProvider)
    return client.provider.engine
