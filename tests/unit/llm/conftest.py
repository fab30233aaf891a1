"""Fixtures for the LLM layer's unit tests: fast retries, a fresh ledger per test."""

from __future__ import annotations

import pytest

from reag.llm.accounting import CostLedger
from reag.llm.settings import LLMSettings


@pytest.fixture
def llm_settings() -> LLMSettings:
    """Defaults, minus the environment and .env, with retries fast enough for a unit test."""
    return LLMSettings(
        _env_file=None,
        model="local:gemma-3-270m",
        backoff_initial_s=0.001,
        backoff_max_s=0.002,
        max_retries=3,
        timeout_s=5.0,
    )


@pytest.fixture
def ledger() -> CostLedger:
    return CostLedger()
