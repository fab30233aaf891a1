"""``reag elicit`` end to end over sockets: simulated users probe the sample app, traffic lands.

The sample app runs on a real port (uvicorn in a thread) and is reached
through the OpenAI-compatible target adapter; the traffic is published to a
real broker. Both the simulated users and the sample app answer with a
scripted LLM (mechanics only; ``make_client`` is replaced for this test).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import typer
import uvicorn
from typer.testing import CliRunner

from reag.apps import load_app
from reag.corpus.model import Document
from reag.corpus.store import CorpusStore
from reag.ids import case_id_for
from reag.llm.base import Message
from reag.llm.client import LLMClient
from reag.llm.scripted import FakeProvider
from reag.v1 import events_pb2 as pb
from shell.cli.elicit import register
from shell.sampleapp.server import create_sample_app
from shell.stack.ports import free_port

pytestmark = [pytest.mark.kafka]

MANIFEST = Path(__file__).parents[3] / "examples/nutrition/app.yaml"


def simulated_user(_messages: Sequence[Message], _options: dict[str, Any]) -> str:
    return json.dumps(
        {
            "profile": "Ana, 61, on dialysis, takes sevelamer.",
            "situation": "Ana is thirsty after her dialysis session and reads a label.",
            "query": "can i have this?",
        }
    )


def app_answer(messages: Sequence[Message], _options: dict[str, Any]) -> str:
    return f"Sample answer to: {messages[-1].content.splitlines()[-1][:40]}"


@pytest.fixture
def sample_app() -> Iterator[tuple[str, FakeProvider]]:
    provider = FakeProvider(chat_script=app_answer)
    app = create_sample_app("You are NutriLens.", LLMClient(provider), served_name="nutrition")
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    try:
        yield f"http://127.0.0.1:{port}/v1", provider
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_elicit_probes_the_app_and_publishes_synthetic_traffic(
    kafka_bootstrap: str,
    topic_suffix: str,
    tmp_path: Path,
    example_corpus: list[Document],
    sample_app: tuple[str, FakeProvider],
    reader: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, app_provider = sample_app
    monkeypatch.setenv("REAG_STATE_DIR", str(tmp_path))
    monkeypatch.delenv("REAG_STORE_DSN", raising=False)
    CorpusStore.open(f"sqlite:///{tmp_path / 'reag.db'}").add("nutrition", example_corpus)
    user_provider = FakeProvider(chat_script=simulated_user)
    monkeypatch.setattr("reag.llm.registry.make_client", lambda *_a, **_k: LLMClient(user_provider))
    cli = typer.Typer()
    register(cli)
    topic = f"reag.traffic.v1.{topic_suffix}"
    result = CliRunner().invoke(
        cli,
        [
            "elicit",
            "--manifest",
            str(MANIFEST),
            "--count",
            "3",
            "--seed",
            "4",
            "--target-url",
            url,
            "--bootstrap",
            kafka_bootstrap,
            "--topic",
            topic,
        ],
    )
    assert result.exit_code == 0, result.output
    assert "3 of 3 cases published" in result.output
    assert len(user_provider.calls) == 3
    assert all(c.options["temperature"] == 0.9 for c in user_provider.calls)
    assert len(app_provider.calls) == 3
    sent = app_provider.calls[0].payload[-1].content
    assert sent.startswith("PROFILE:\nAna, 61, on dialysis")
    assert "\nLABEL:\n" in sent
    # The real seed query is sent as it is; the agent wrote only profile and situation.
    seeds = load_app(MANIFEST).load_seed_queries()
    assert any(f"QUESTION:\n{seed.text}" in sent for seed in seeds)
    assert "can i have this?" not in sent

    values = asyncio.run(reader(topic, lambda got: len(got) >= 3, 30))
    events = [pb.Traffic.FromString(v) for v in values]
    assert len(events) == 3
    run_ids = {e.meta.run_id for e in events}
    assert len(run_ids) == 1
    for event in events:
        assert event.meta.origin == pb.ORIGIN_SYNTHETIC
        assert event.meta.case_id == case_id_for("nutrition", event.request_id)
        assert event.actual_response.startswith("Sample answer to:")
        assert event.target.startswith(f"openai:{url}")
        assert event.situation
        assert event.profile.persona_hint
