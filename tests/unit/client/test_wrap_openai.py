"""``wrap_openai`` on real OpenAI SDK clients talking to a mock transport: the call's
result is untouched, the exchange is recorded, and recording never fails the call."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx2 as httpx  # the HTTP library this openai SDK is built on
import openai
import pytest

from reag.client import Recorder, wrap_openai
from reag.v1 import events_pb2 as pb

COMPLETION = {
    "id": "chatcmpl-abc123",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Drink water."},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
}
MESSAGES: list[Any] = [
    {"role": "system", "content": "You are NutriLens."},
    {"role": "user", "content": "first question"},
    {"role": "assistant", "content": "an answer"},
    {"role": "user", "content": [{"type": "text", "text": "Is cola OK?"}]},
]


def answer(_request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json=COMPLETION)


class Sink:
    """A producer that keeps what it is sent."""

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


@pytest.fixture
def sink() -> Sink:
    return Sink()


@pytest.fixture
def recorder(sink: Sink) -> Iterator[Recorder]:
    with Recorder(app="nutrition", producer_factory=lambda: sink) as rec:
        yield rec


def test_sync_client_calls_are_recorded_and_returned_unchanged(
    recorder: Recorder, sink: Sink
) -> None:
    client = openai.OpenAI(
        api_key="k",
        base_url="http://app.test/v1",
        http_client=httpx.Client(transport=httpx.MockTransport(answer)),
    )
    assert wrap_openai(client, recorder, profile={"diet": "renal"}) is client
    result = client.chat.completions.create(model="m", messages=MESSAGES, user="u-9")
    assert result.choices[0].message.content == "Drink water."
    assert result.id == "chatcmpl-abc123"
    assert recorder.flush(5)
    [event] = [pb.Traffic.FromString(v) for v in sink.values]
    assert event.query == "Is cola OK?"
    assert event.actual_response == "Drink water."
    assert event.request_id == "chatcmpl-abc123"
    assert event.profile.user_id == "u-9"
    assert dict(event.profile.attributes) == {"diet": "renal"}
    assert event.response_latency_s > 0


def test_async_client_calls_are_recorded(recorder: Recorder, sink: Sink) -> None:
    async def call() -> Any:
        client = openai.AsyncOpenAI(
            api_key="k",
            base_url="http://app.test/v1",
            http_client=httpx.AsyncClient(transport=httpx.MockTransport(answer)),
        )
        wrap_openai(client, recorder, user_id="fixed")
        wrap_openai(client, recorder)  # wrapping twice records once
        return await client.chat.completions.create(model="m", messages=MESSAGES)

    result = asyncio.run(call())
    assert result.choices[0].message.content == "Drink water."
    assert recorder.flush(5)
    [event] = [pb.Traffic.FromString(v) for v in sink.values]
    assert event.query == "Is cola OK?"
    assert event.profile.user_id == "fixed"


def test_a_failing_recorder_never_fails_the_call(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(**_kwargs: Any) -> bool:
        raise RuntimeError("recorder broke")

    monkeypatch.setattr(recorder, "record", broken)
    client = openai.OpenAI(
        api_key="k",
        base_url="http://app.test/v1",
        http_client=httpx.Client(transport=httpx.MockTransport(answer)),
    )
    wrap_openai(client, recorder)
    result = client.chat.completions.create(model="m", messages=MESSAGES)
    assert result.choices[0].message.content == "Drink water."
    assert recorder.stats().failed == 1


def test_errors_of_the_call_itself_pass_through(recorder: Recorder, sink: Sink) -> None:
    def refuse(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, json={"error": {"message": "bad", "type": "invalid"}})

    client = openai.OpenAI(
        api_key="k",
        base_url="http://app.test/v1",
        max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(refuse)),
    )
    wrap_openai(client, recorder)
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="m", messages=MESSAGES)
    assert recorder.flush(5)
    assert sink.values == []


def test_streams_pass_through_unrecorded(recorder: Recorder, sink: Sink) -> None:
    chunk = {**COMPLETION, "object": "chat.completion.chunk"}
    chunk["choices"] = [{"index": 0, "delta": {"content": "Drink"}, "finish_reason": None}]
    body = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n"

    def stream(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})

    client = openai.OpenAI(
        api_key="k",
        base_url="http://app.test/v1",
        http_client=httpx.Client(transport=httpx.MockTransport(stream)),
    )
    wrap_openai(client, recorder)
    parts = [
        c.choices[0].delta.content
        for c in client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    ]
    assert parts == ["Drink"]
    assert recorder.flush(5)
    assert sink.values == []
