"""The Gemini provider through google-genai, against a scripted HTTP transport."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from google import genai
from google.genai import types

from reag.llm.base import (
    CapabilityError,
    ConfigurationError,
    Message,
    PermanentLLMError,
    RateLimitedError,
    TransientLLMError,
    Usage,
)
from reag.llm.gemini_provider import GeminiProvider

Handler = Callable[[dict[str, Any]], httpx.Response]


def answer(
    text: str, top: list[tuple[str, float]] | None = None, *, prompt: int = 40, thoughts: int = 0
) -> dict[str, Any]:
    candidate: dict[str, Any] = {
        "content": {"role": "model", "parts": [{"text": text}]},
        "finishReason": "STOP",
    }
    if top is not None:
        candidate["logprobsResult"] = {
            "topCandidates": [
                {"candidates": [{"token": t, "logProbability": lp} for t, lp in top]}
            ],
            "chosenCandidates": [{"token": top[0][0], "logProbability": top[0][1]}],
        }
    return {
        "candidates": [candidate],
        "usageMetadata": {
            "promptTokenCount": prompt,
            "candidatesTokenCount": 1,
            "thoughtsTokenCount": thoughts,
            "totalTokenCount": prompt + 1 + thoughts,
        },
    }


def provider_for(
    handler: Handler,
    model: str = "gemini-2.5-flash-lite",
) -> tuple[GeminiProvider, list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []

    def respond(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        return handler(body)

    http = httpx.AsyncClient(transport=httpx.MockTransport(respond))
    client = genai.Client(
        api_key="test-key", http_options=types.HttpOptions(httpx_async_client=http)
    )
    return GeminiProvider(model, api_key="test-key", timeout_s=5, client=client), seen


async def test_label_probs_from_response_logprobs() -> None:
    top = [("YES", -0.1), ("NO", -2.5), ("The", -4.0)]
    provider, seen = provider_for(lambda _b: httpx.Response(200, json=answer("YES", top)))

    result = await provider.label_probs("Is it? YES or NO.", ["YES", "NO"])

    yes, no = math.exp(-0.1), math.exp(-2.5)
    assert result.method == "logprobs"
    assert result.probabilities["YES"] == pytest.approx(yes / (yes + no))
    assert result.label_mass == pytest.approx(yes + no)
    config = seen[0]["generationConfig"]
    assert config["responseLogprobs"] is True
    assert config["logprobs"] == 20
    thinking = config["thinkingConfig"]  # the SDK sends this one in snake case
    assert thinking.get("thinkingBudget", thinking.get("thinking_budget")) == 0


async def test_missing_logprobs_fall_back_to_sampling() -> None:
    replies = iter(["NO", "NO", "YES"])

    def handler(body: dict[str, Any]) -> httpx.Response:
        if body["generationConfig"].get("responseLogprobs"):
            return httpx.Response(200, json=answer("NO"))  # no logprobsResult
        return httpx.Response(200, json=answer(next(replies)))

    provider, seen = provider_for(handler)
    result = await provider.label_probs("Is it?", ["YES", "NO"], n_samples=3)

    assert result.method == "sampling"
    assert result.probabilities == pytest.approx({"YES": 1 / 3, "NO": 2 / 3})
    assert result.n_calls == 4
    assert all(b["generationConfig"]["temperature"] == 0.7 for b in seen[1:])


async def test_thinking_tokens_are_billed_as_output_and_system_goes_apart() -> None:
    provider, seen = provider_for(
        lambda _b: httpx.Response(200, json=answer("hello", prompt=12, thoughts=30))
    )
    result = await provider.chat(
        [
            Message("system", "be brief"),
            Message("user", "hi"),
            Message("assistant", "yo"),
            Message("user", "again"),
        ]
    )
    assert result.usage == Usage(prompt_tokens=12, completion_tokens=31)
    assert seen[0]["systemInstruction"]["parts"][0]["text"] == "be brief"
    assert [c["role"] for c in seen[0]["contents"]] == ["user", "model", "user"]


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (429, RateLimitedError),
        (500, TransientLLMError),
        (503, TransientLLMError),
        (403, PermanentLLMError),
        (400, PermanentLLMError),
    ],
)
async def test_http_errors_map_to_reag_error_types(status: int, error: type[Exception]) -> None:
    provider, _ = provider_for(
        lambda _b: httpx.Response(
            status, json={"error": {"code": status, "message": "nope", "status": "X"}}
        )
    )
    with pytest.raises(error):
        await provider.chat([Message("user", "hi")])


async def test_continuation_scoring_is_refused_naming_the_models_that_can() -> None:
    provider, _ = provider_for(lambda _b: httpx.Response(200, json=answer("x")))
    with pytest.raises(CapabilityError, match="local:gemma-3-270m"):
        await provider.score_continuation("doc", "query")


def test_gemini_without_a_key_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="REAG_LLM_GEMINI_API_KEY"):
        GeminiProvider("gemini-2.5-flash", api_key=None, timeout_s=5)
