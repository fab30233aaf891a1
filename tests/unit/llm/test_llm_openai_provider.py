"""The OpenAI provider through the real SDK, against a scripted HTTP transport."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import httpx2 as httpx  # the HTTP library this openai SDK is built on
import pytest
from openai import AsyncOpenAI

from reag.llm.base import (
    CapabilityError,
    ConfigurationError,
    Message,
    PermanentLLMError,
    RateLimitedError,
    TransientLLMError,
    Usage,
)
from reag.llm.openai_provider import OpenAIProvider

Handler = Callable[[dict[str, Any]], httpx.Response]


def completion(
    text: str, top: list[tuple[str, float]] | None = None, prompt_tokens: int = 50, cached: int = 0
) -> dict[str, Any]:
    logprobs = None
    if top is not None:
        logprobs = {
            "content": [
                {
                    "token": top[0][0],
                    "logprob": top[0][1],
                    "bytes": None,
                    "top_logprobs": [{"token": t, "logprob": lp, "bytes": None} for t, lp in top],
                }
            ]
        }
    return {
        "id": "cmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4.1-mini",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "logprobs": logprobs,
                "message": {"role": "assistant", "content": text},
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": 1,
            "total_tokens": prompt_tokens + 1,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def provider_for(
    handler: Handler, *, base_url: str | None = None, model: str = "gpt-4.1-mini"
) -> tuple[OpenAIProvider, list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []

    def respond(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        return handler(body)

    client = AsyncOpenAI(
        api_key="test-key",
        base_url=base_url or "https://api.test/v1",
        max_retries=0,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(respond)),
    )
    return OpenAIProvider(
        model, api_key="test-key", base_url=base_url, timeout_s=5, client=client
    ), seen


async def test_label_probs_from_top_logprobs_sum_spellings_and_renormalise() -> None:
    top = [("YES", -0.2), (" yes", -2.0), ("No", -1.8), ("Maybe", -3.0)]
    provider, seen = provider_for(lambda _b: httpx.Response(200, json=completion("YES", top)))

    result = await provider.label_probs("Is it? Answer YES or NO.", ["YES", "NO"])

    yes, no = math.exp(-0.2) + math.exp(-2.0), math.exp(-1.8)
    assert result.method == "logprobs"
    assert result.probabilities["YES"] == pytest.approx(yes / (yes + no))
    assert sum(result.probabilities.values()) == pytest.approx(1.0)
    assert result.label_mass == pytest.approx(yes + no)
    assert result.n_calls == 1
    body = seen[0]
    assert (body["logprobs"], body["top_logprobs"], body["max_completion_tokens"]) == (True, 20, 1)
    assert body["messages"] == [{"role": "user", "content": "Is it? Answer YES or NO."}]


async def test_no_label_among_top_logprobs_falls_back_to_sampling_and_counts_all_calls() -> None:
    replies = iter(["YES", "YES", "NO", "YES", "YES"])

    def handler(body: dict[str, Any]) -> httpx.Response:
        if body.get("logprobs"):
            return httpx.Response(200, json=completion("Sure", [("Sure", -0.1), ("I", -2.0)]))
        return httpx.Response(200, json=completion(next(replies), prompt_tokens=50))

    provider, seen = provider_for(handler)
    result = await provider.label_probs([Message("user", "Is it?")], ["YES", "NO"], n_samples=5)

    assert result.method == "sampling"
    assert result.probabilities == {"YES": 0.8, "NO": 0.2}
    assert result.n_calls == 6
    assert result.usage == Usage(prompt_tokens=6 * 50, completion_tokens=6)
    assert all(b["temperature"] == 0.7 for b in seen[1:])


async def test_refused_logprobs_fall_back_and_are_not_asked_for_again() -> None:
    def handler(body: dict[str, Any]) -> httpx.Response:
        if body.get("logprobs"):
            return httpx.Response(
                400,
                json={
                    "error": {
                        "message": "logprobs are not supported with this model",
                        "type": "invalid",
                    }
                },
            )
        return httpx.Response(200, json=completion("NO"))

    provider, seen = provider_for(handler)
    first = await provider.label_probs("Is it?", ["YES", "NO"], n_samples=2)
    second = await provider.label_probs("Is it?", ["YES", "NO"], n_samples=2)

    assert first.method == second.method == "sampling"
    assert first.n_calls == 2  # the refused request is not billed
    assert [bool(b.get("logprobs")) for b in seen] == [True, False, False, False, False]


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (429, RateLimitedError),
        (500, TransientLLMError),
        (503, TransientLLMError),
        (401, PermanentLLMError),
        (400, PermanentLLMError),
    ],
)
async def test_http_errors_map_to_reag_error_types(status: int, error: type[Exception]) -> None:
    provider, _ = provider_for(
        lambda _b: httpx.Response(status, json={"error": {"message": "nope", "type": "x"}})
    )
    with pytest.raises(error):
        await provider.chat([Message("user", "hi")])


async def test_bad_key_error_names_the_setting() -> None:
    provider, _ = provider_for(
        lambda _b: httpx.Response(401, json={"error": {"message": "bad key", "type": "x"}})
    )
    with pytest.raises(PermanentLLMError, match="REAG_LLM_OPENAI_API_KEY") as info:
        await provider.chat([Message("user", "hi")])
    assert "test-key" not in str(info.value)


async def test_chat_sends_the_schema_and_reads_cached_tokens() -> None:
    provider, seen = provider_for(
        lambda _b: httpx.Response(200, json=completion('{"a": 1}', prompt_tokens=80, cached=64))
    )
    schema = {"title": "Verdict v1", "type": "object", "properties": {"a": {"type": "integer"}}}

    result = await provider.chat(
        [Message("system", "s"), Message("user", "u")], json_schema=schema, seed=3, stop=["\n\n"]
    )

    assert result.text == '{"a": 1}'
    assert result.usage == Usage(prompt_tokens=80, completion_tokens=1, cached_tokens=64)
    fmt = seen[0]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Verdict_v1"
    assert fmt["json_schema"]["schema"] == schema
    assert (seen[0]["seed"], seen[0]["stop"]) == (3, ["\n\n"])


async def test_compatible_server_gets_max_tokens() -> None:
    provider, seen = provider_for(
        lambda _b: httpx.Response(200, json=completion("hi")),
        base_url="http://127.0.0.1:8000/v1",
        model="qwen",
    )
    await provider.chat([Message("user", "hi")], max_tokens=7)
    assert seen[0]["max_tokens"] == 7
    assert "max_completion_tokens" not in seen[0]


async def test_reasoning_models_get_no_temperature_and_sample_for_labels() -> None:
    provider, seen = provider_for(
        lambda _b: httpx.Response(200, json=completion("YES")), model="gpt-5-mini"
    )
    result = await provider.label_probs("Is it?", ["YES", "NO"], n_samples=3)
    assert result.method == "sampling"
    assert all("temperature" not in b and "logprobs" not in b for b in seen)


async def test_continuation_scoring_is_refused_naming_the_models_that_can() -> None:
    provider, _ = provider_for(lambda _b: httpx.Response(200, json=completion("x")))
    with pytest.raises(CapabilityError, match="local:gemma-3-270m"):
        await provider.score_continuation("doc", "query")


def test_openai_without_a_key_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="REAG_LLM_OPENAI_API_KEY"):
        OpenAIProvider("gpt-4.1-mini", api_key=None, base_url=None, timeout_s=5)


async def test_a_429_carries_the_wait_its_retry_after_header_asks_for() -> None:
    provider, _ = provider_for(
        lambda _b: httpx.Response(
            429,
            headers={"retry-after": "7"},
            json={"error": {"message": "slow down", "type": "x"}},
        )
    )
    with pytest.raises(RateLimitedError) as info:
        await provider.chat([Message("user", "hi")])
    assert info.value.retry_after_s == 7.0
