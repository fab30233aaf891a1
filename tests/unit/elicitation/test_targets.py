"""Target adapters against local mock apps (FastAPI over httpx's ASGI transport, no sockets)."""

from __future__ import annotations

from typing import Any

import httpx
import httpx2
import pytest
from fastapi import FastAPI, Request
from openai import AsyncOpenAI

from reag.apps import HttpJsonTarget, OpenAITarget
from reag.elicitation.targets import (
    HttpJsonTargetAdapter,
    OpenAICompatibleTarget,
    TargetError,
    TargetRequest,
    extract,
    render,
)
from reag.v1 import events_pb2 as pb

REQUEST = TargetRequest(
    query="Is this OK for me?",
    profile=pb.UserProfile(
        user_id="u1", persona_hint="ckd", description="On dialysis.", attributes={"age": "70"}
    ),
    context="Salt 2.4 g/100 g",
    context_title="product label",
)


def openai_mock(seen: list[dict[str, Any]]) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> dict[str, Any]:
        body = await request.json()
        seen.append(body)
        return {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "Limit it."},
                }
            ],
        }

    return app


def openai_client(app: FastAPI) -> AsyncOpenAI:
    # The openai SDK is built on httpx2, the httpx fork it ships with.
    http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://mock")
    return AsyncOpenAI(base_url="http://mock/v1", api_key="k", http_client=http)


async def test_openai_target_sends_the_rendered_turns_and_returns_the_reply() -> None:
    seen: list[dict[str, Any]] = []
    config = OpenAITarget(
        base_url="http://mock/v1",
        model="nutri",
        temperature=0.2,
        user_template="PROFILE:\n{profile}\nQUESTION:\n{query}\nLABEL:\n{context}",
    )
    target = OpenAICompatibleTarget(config, client=openai_client(openai_mock(seen)))
    reply = await target.ask(REQUEST)
    assert reply.text == "Limit it."
    assert reply.latency_s >= 0.0
    assert reply.endpoint == "openai:http://mock/v1/chat/completions#nutri"
    (body,) = seen
    assert body["model"] == "nutri"
    assert body["temperature"] == 0.2
    assert body["messages"] == [
        {"role": "system", "content": "User profile:\nOn dialysis.\nage: 70"},
        {
            "role": "user",
            "content": "PROFILE:\nOn dialysis.\nage: 70\nQUESTION:\nIs this OK for me?"
            "\nLABEL:\nSalt 2.4 g/100 g",
        },
    ]


async def test_openai_target_without_system_template_sends_only_the_user_turn() -> None:
    seen: list[dict[str, Any]] = []
    config = OpenAITarget(base_url="http://mock/v1", system_template=None)
    await OpenAICompatibleTarget(config, client=openai_client(openai_mock(seen))).ask(REQUEST)
    assert seen[0]["messages"] == [
        {"role": "user", "content": "Is this OK for me?\n\n[product label]\nSalt 2.4 g/100 g"}
    ]


async def test_openai_target_errors_name_the_endpoint() -> None:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def broken() -> None:
        raise RuntimeError("boom")

    http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app, raise_app_exceptions=False))
    client = AsyncOpenAI(base_url="http://mock/v1", api_key="k", http_client=http, max_retries=0)
    target = OpenAICompatibleTarget(OpenAITarget(base_url="http://mock/v1"), client=client)
    with pytest.raises(TargetError, match=r"openai:http://mock/v1/chat/completions.*failed"):
        await target.ask(REQUEST)


def http_mock(seen: list[Any], status: int = 200, reply: Any = None) -> httpx.AsyncClient:
    app = FastAPI()

    @app.post("/ask")
    async def ask(request: Request) -> Any:
        seen.append((await request.json(), dict(request.headers)))
        if status != 200:
            from fastapi.responses import JSONResponse

            return JSONResponse({"detail": "down"}, status_code=status)
        return reply if reply is not None else {"answer": {"parts": ["first", "Eat less salt."]}}

    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app))


async def test_http_target_fills_the_template_and_follows_the_response_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("APP_TOKEN", "secret-1")
    seen: list[Any] = []
    config = HttpJsonTarget(
        url="http://mock/ask",
        headers={"x-tenant": "t1"},
        headers_from_env={"authorization": "APP_TOKEN"},
        request_template={
            "question": "{query}",
            "label": "{context}",
            "user": "$profile_json",
            "meta": {"tags": ["{persona_hint}", 3]},
            "raw": '{"kept": 1}',
        },
        response_path="answer.parts.-1",
    )
    reply = await HttpJsonTargetAdapter(config, client=http_mock(seen)).ask(REQUEST)
    assert reply.text == "Eat less salt."
    body, headers = seen[0]
    assert body == {
        "question": "Is this OK for me?",
        "label": "Salt 2.4 g/100 g",
        "user": {
            "user_id": "u1",
            "persona_hint": "ckd",
            "description": "On dialysis.",
            "attributes": {"age": "70"},
        },
        "meta": {"tags": ["ckd", 3]},
        "raw": '{"kept": 1}',
    }
    assert headers["authorization"] == "secret-1"
    assert headers["x-tenant"] == "t1"


async def test_http_target_reports_http_errors_and_bad_paths() -> None:
    config = HttpJsonTarget(url="http://mock/ask")
    with pytest.raises(TargetError, match="HTTP 503"):
        await HttpJsonTargetAdapter(config, client=http_mock([], status=503)).ask(REQUEST)
    with pytest.raises(TargetError, match="nothing at 'response'"):
        await HttpJsonTargetAdapter(config, client=http_mock([])).ask(REQUEST)


def test_a_missing_header_variable_is_named() -> None:
    config = HttpJsonTarget(url="http://x", headers_from_env={"authorization": "NOPE_UNSET_VAR"})
    with pytest.raises(TargetError, match="NOPE_UNSET_VAR"):
        HttpJsonTargetAdapter(config)


def test_extract_and_render_edge_cases() -> None:
    assert extract({"a": [{"b": "x"}]}, "a.0.b") == "x"
    with pytest.raises(TargetError, match="not text"):
        extract({"a": 1}, "a")
    with pytest.raises(TargetError, match="nothing at '5'"):
        extract({"a": []}, "a.5")
    assert render("{unknown} {query}", REQUEST) == "{unknown} Is this OK for me?"
    assert render(None, REQUEST) is None
