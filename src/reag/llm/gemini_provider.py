"""``gemini:<model>`` through the google-genai SDK.

Label probabilities come from the response's log-probabilities (the top 20
candidates of the first answer token) where the model returns them, else from
N samples at temperature 0.7. Gemini 2.5 Flash models think before answering
by default and bill the thinking as output; a one-word label needs none, so
thinking is switched off for them where the API allows it. No prompt-token
log-probabilities are exposed, so continuation scoring is refused.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import httpx
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from reag.llm.base import (
    CapabilityError,
    ChatResult,
    ConfigurationError,
    ContinuationScore,
    LabelProbs,
    LLMError,
    LLMTimeoutError,
    Message,
    PermanentLLMError,
    TransientLLMError,
    Usage,
    error_for_status,
)
from reag.llm.openai_provider import SCORING_MODELS
from reag.llm.sampling import SAMPLING_TEMPERATURE, LogprobsReply, LogprobsThenSampling

TOP_LOGPROBS = 20


def map_gemini_error(exc: Exception, model: str) -> LLMError:
    """The reag error type a caller can act on for an SDK or transport exception."""
    if isinstance(exc, httpx.TimeoutException):
        return LLMTimeoutError(f"{model} timed out: {exc}")
    if isinstance(exc, httpx.TransportError):
        return TransientLLMError(f"{model}: connection failed: {exc}")
    if isinstance(exc, genai_errors.APIError):
        return error_for_status(
            exc.code,
            model,
            str(exc.message),
            "REAG_LLM_GEMINI_API_KEY",
            headers=getattr(getattr(exc, "response", None), "headers", None),
        )
    return PermanentLLMError(f"{model}: unexpected error from google-genai: {exc!r}")


def _usage(meta: Any) -> Usage:
    if meta is None:
        return Usage()
    return Usage(
        prompt_tokens=meta.prompt_token_count or 0,
        # thinking tokens are billed as output
        completion_tokens=(meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0),
        cached_tokens=meta.cached_content_token_count or 0,
    )


def _split(messages: Sequence[Message]) -> tuple[str | None, list[types.Content]]:
    system = "\n\n".join(m.content for m in messages if m.role == "system") or None
    contents = [
        types.Content(
            role="model" if m.role == "assistant" else "user", parts=[types.Part(text=m.content)]
        )
        for m in messages
        if m.role != "system"
    ]
    return system, contents


def _first_token_alternatives(response: types.GenerateContentResponse) -> list[tuple[str, float]]:
    """(token, log-probability) of the first answer token's top candidates; [] when absent."""
    if not response.candidates:
        return []
    result = response.candidates[0].logprobs_result
    if result is None or not result.top_candidates:
        return []
    return [
        (alt.token or "", alt.log_probability)
        for alt in result.top_candidates[0].candidates or []
        if alt.log_probability is not None
    ]


class GeminiProvider:
    def __init__(
        self,
        model_name: str,
        *,
        api_key: str | None,
        timeout_s: float,
        client: genai.Client | None = None,
    ) -> None:
        if client is None and not api_key:
            raise ConfigurationError(
                f"gemini:{model_name} needs an API key: set REAG_LLM_GEMINI_API_KEY "
                "(or GEMINI_API_KEY)"
            )
        self.model = f"gemini:{model_name}"
        self.model_name = model_name
        self._client = client or genai.Client(
            api_key=api_key,
            http_options=types.HttpOptions(timeout=int(timeout_s * 1000)),
        )
        self._can_skip_thinking = "2.5-flash" in model_name
        # A label needs a few tokens, unless the model thinks before it answers.
        self._label_max_tokens = 8 if self._can_skip_thinking else 1024
        self._label_probs = LogprobsThenSampling(
            self.model,
            request=self._request_logprobs,
            is_refusal=lambda exc: "logprob" in str(exc).lower(),
            chat=self.chat,
            sampling_max_tokens=self._label_max_tokens,
            sampling_temperature=SAMPLING_TEMPERATURE,
        )

    async def _generate(
        self,
        messages: Sequence[Message],
        config: types.GenerateContentConfig,
    ) -> types.GenerateContentResponse:
        system, contents = _split(messages)
        config.system_instruction = system
        try:
            return await self._client.aio.models.generate_content(
                model=self.model_name,
                contents=contents,
                config=config,
            )
        except (genai_errors.APIError, httpx.HTTPError) as exc:
            raise map_gemini_error(exc, self.model) from exc

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int = 512,
        json_schema: dict[str, Any] | None = None,
        seed: int | None = None,
        stop: Sequence[str] | None = None,
    ) -> ChatResult:
        started = time.perf_counter()
        config = types.GenerateContentConfig(
            temperature=temperature,
            max_output_tokens=max_tokens,
            seed=seed,
            stop_sequences=list(stop) if stop else None,
        )
        if json_schema is not None:
            config.response_mime_type = "application/json"
            config.response_json_schema = json_schema
        response = await self._generate(messages, config)
        return ChatResult(
            text=response.text or "",
            model=self.model,
            usage=_usage(response.usage_metadata),
            latency_s=time.perf_counter() - started,
        )

    async def label_probs(
        self,
        prompt: str | Sequence[Message],
        labels: Sequence[str],
        *,
        n_samples: int = 5,
    ) -> LabelProbs:
        return await self._label_probs(prompt, labels, n_samples)

    async def _request_logprobs(self, messages: list[Message]) -> LogprobsReply:
        """One greedy answer with the first token's top ``TOP_LOGPROBS`` candidates."""
        config = types.GenerateContentConfig(
            temperature=0.0,
            response_logprobs=True,
            logprobs=TOP_LOGPROBS,
            max_output_tokens=self._label_max_tokens,
        )
        if self._can_skip_thinking:
            config.thinking_config = types.ThinkingConfig(thinking_budget=0)
        response = await self._generate(messages, config)
        return LogprobsReply(_usage(response.usage_metadata), _first_token_alternatives(response))

    async def score_continuation(self, context: str, target: str) -> ContinuationScore:
        raise CapabilityError(
            f"{self.model} gives no log-probabilities of prompt tokens, so it cannot score a "
            f"continuation; use {SCORING_MODELS}"
        )

    async def aclose(self) -> None:
        await self._client.aio.aclose()
