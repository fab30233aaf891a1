"""The sample app records its own traffic through reag.client when it is given a recorder,
as a production app would, and records nothing when it is not (the demo's default)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import httpx2
from fastapi.testclient import TestClient

from reag.client import Recorder
from reag.llm.base import Message
from reag.llm.client import LLMClient
from reag.llm.scripted import FakeProvider
from reag.v1 import events_pb2 as pb
from shell.sampleapp.server import create_sample_app


class Sink:
    def __init__(self) -> None:
        self.values: list[bytes] = []

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def send(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        *,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> asyncio.Future[None]:
        assert value is not None
        self.values.append(value)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        future.set_result(None)
        return future


def answer(_messages: Sequence[Message], _options: dict[str, Any]) -> str:
    return "Write to care@nutrilens.example for a plan."


def test_answered_requests_are_recorded_redacted_and_flushed_at_shutdown() -> None:
    sink = Sink()
    recorder = Recorder(app="nutrition", producer_factory=lambda: sink)
    app = create_sample_app("p", LLMClient(FakeProvider(chat_script=answer)), recorder=recorder)
    with TestClient(app) as http:  # runs the app's lifespan: the recorder closes at the end
        reply = http.post(
            "/v1/chat/completions",
            json={
                "messages": [
                    {"role": "system", "content": "profile"},
                    {"role": "user", "content": "Can I eat this? I'm ana@example.org"},
                ],
                "user": "u-5",
            },
        )
    assert reply.status_code == 200
    body = reply.json()
    [event] = [pb.Traffic.FromString(v) for v in sink.values]  # closed at shutdown: flushed
    assert event.query == "Can I eat this? I'm [REDACTED:EMAIL]"
    assert event.actual_response == "Write to [REDACTED:EMAIL] for a plan."
    assert event.request_id == body["id"]
    assert event.profile.user_id == "u-5"
    assert body["choices"][0]["message"]["content"] == answer([], {})  # the app is unchanged


async def test_without_a_recorder_nothing_is_recorded() -> None:
    app = create_sample_app("p", LLMClient(FakeProvider(chat_script=answer)))
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://app") as http:
        reply = await http.post(
            "/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]}
        )
    assert reply.status_code == 200
