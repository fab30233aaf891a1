"""The sample app's OpenAI-compatible endpoint, probed by the elicitor's OpenAI target adapter."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx2
import pytest
from fastapi import FastAPI
from openai import AsyncOpenAI

from reag.apps import OpenAITarget
from reag.elicitation.targets import OpenAICompatibleTarget, TargetError, TargetRequest
from reag.llm.base import InvalidRequestError, Message
from reag.llm.client import LLMClient
from reag.llm.scripted import FakeProvider
from reag.v1 import events_pb2 as pb
from shell.sampleapp.server import create_sample_app


def served(app: FastAPI) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://app")


def answer(messages: Sequence[Message], options: dict[str, Any]) -> str:
    return f"  answered {len(messages)} messages at T={options['temperature']}  "


async def test_the_sample_app_puts_its_prompt_first_and_answers_like_openai() -> None:
    provider = FakeProvider(chat_script=answer)
    app = create_sample_app(
        "You are NutriLens.",
        LLMClient(provider),
        served_name="nutrition",
        temperature=0.3,
        max_tokens=50,
    )
    config = OpenAITarget(
        base_url="http://app/v1",
        model="nutrition",
        user_template="PROFILE:\n{profile}\nQUESTION:\n{query}",
    )
    client = AsyncOpenAI(base_url="http://app/v1", api_key="x", http_client=served(app))
    target = OpenAICompatibleTarget(config, client=client)
    reply = await target.ask(TargetRequest("Is this OK?", pb.UserProfile(description="CKD 4")))
    assert reply.text == "answered 3 messages at T=0.3"
    (call,) = provider.calls
    assert [(m.role, m.content) for m in call.payload] == [
        ("system", "You are NutriLens."),
        ("system", "User profile:\nCKD 4"),
        ("user", "PROFILE:\nCKD 4\nQUESTION:\nIs this OK?"),
    ]
    assert call.options["max_tokens"] == 50


async def test_the_request_may_lower_but_not_raise_the_token_limit() -> None:
    provider = FakeProvider(chat_script=answer)
    app = create_sample_app("p", LLMClient(provider), max_tokens=50)
    async with served(app) as http:
        low = await http.post(
            "/v1/chat/completions",
            json={
                "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": 10,
                "temperature": 0.0,
            },
        )
        high = await http.post(
            "/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4000},
        )
        models = await http.get("/v1/models")
    assert low.status_code == high.status_code == 200
    assert [c.options["max_tokens"] for c in provider.calls] == [10, 50]
    assert provider.calls[0].options["temperature"] == 0.0
    body = low.json()
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"]["role"] == "assistant"
    assert body["usage"]["total_tokens"] == (
        body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"]
    )
    assert models.json()["data"][0]["id"] == "sample-app"


async def test_bad_requests_and_model_failures_get_openai_style_errors() -> None:
    def fail(_messages: Sequence[Message], _options: dict[str, Any]) -> str:
        raise InvalidRequestError("prompt longer than the context window")

    app = create_sample_app("p", LLMClient(FakeProvider(chat_script=fail)))
    async with served(app) as http:
        no_user = await http.post(
            "/v1/chat/completions", json={"messages": [{"role": "system", "content": "x"}]}
        )
        empty = await http.post("/v1/chat/completions", json={"messages": []})
        failed = await http.post(
            "/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}]}
        )
    assert no_user.status_code == 400
    assert "user message" in no_user.json()["error"]["message"]
    assert empty.status_code == 422
    assert failed.status_code == 500
    assert "context window" in failed.json()["error"]["message"]
    client = AsyncOpenAI(
        base_url="http://app/v1", api_key="x", http_client=served(app), max_retries=0
    )
    target = OpenAICompatibleTarget(OpenAITarget(base_url="http://app/v1"), client=client)
    with pytest.raises(TargetError, match="context window"):
        await target.ask(TargetRequest("q", pb.UserProfile()))
