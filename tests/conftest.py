"""Fixtures shared by every test.

One Tansu broker per test session (quix-streams does the same), a fresh topic
name per test (FastStream's uuid fixture), so tests never see each other's
events.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator

import pytest

from shell.stack.ports import free_port
from shell.stack.tansu import start_tansu


@pytest.fixture(autouse=True)
def _cascade_of_the_mechanics_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cascade the mechanics tests assume: three tiers on one model, N = 5 each.

    The embedded default (two local models at N = 1, reag.judging.settings) is a
    measured choice that may change; tests of routing, scoring and calibration
    should not change with it. A test of the default itself deletes these.
    """
    monkeypatch.setenv("REAG_TIER_MODELS", "")
    monkeypatch.setenv("REAG_TIER_ANNOTATORS", "")


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """Bootstrap servers of a Tansu broker on a free port, for this session only."""
    port = free_port()
    proc = start_tansu(port)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def topic_suffix() -> str:
    """Append to topic names to isolate one test's topics from another's."""
    return uuid.uuid4().hex[:10]


@pytest.fixture(scope="session")
def local_llm_client() -> object:
    """An ``LLMClient`` on the real local model (Gemma 3 270M), loaded once per session.

    Always in process, whatever REAG_LLM_LOCAL_URL says. Its log-probabilities
    are real; its verdicts carry no signal. Mark tests that use it ``llm``.
    """
    from reag.llm import Caller, LLMSettings
    from reag.llm.registry import make_client

    return make_client(
        "local:gemma-3-270m", caller=Caller("tests"), settings=LLMSettings(local_url=None)
    )
