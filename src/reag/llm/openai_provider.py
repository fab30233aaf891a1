"""``openai:<model>``: OpenAI, or any OpenAI-compatible server by base URL.

vLLM, the llama.cpp server and Ollama speak the same chat-completions API; a
base URL (``REAG_LLM_OPENAI_BASE_URL``) points the provider at one of them.

Label probabilities come from the first generated token's ``top_logprobs``
(20 alternatives), summed per label over the tokens that spell it (stripped,
case-insensitive) and renormalised. When none of the labels is among them, or
the model refuses log-probabilities (reasoning models do), they come from N
samples at temperature 0.7 instead, and every one of those calls is counted.
The API gives no log-probabilities of prompt tokens, so continuation scoring
is refused.

SDK exceptions are mapped onto reag's error types: the client retries
``TransientLLMError`` (429, 5xx, timeouts, dropped connections) and nothing else.
The SDK's own retries are off so that retries are counted in one place.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any

import openai
from openai import AsyncOpenAI

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
from reag.llm.sampling import SAMPLING_TEMPERATURE, LogprobsReply, LogprobsThenSampling

TOP_LOGPROBS = 20
SCORING_MODELS = "local:gemma-3-270m (in process, or through `reag llm serve`)"
# Reasoning models accept neither a temperature nor log-probabilities.
_REASONING = re.compile(r"^(o\d|gpt-5)(?!.*-chat)")
_SCHEMA_NAME = re.compile(r"[^a-zA-Z0-9_-]")


def map_openai_error(exc: Exception, model: str) -> LLMError:
    """The reag error type a caller can act on for an SDK exception."""
    if isinstance(exc, openai.APITimeoutError):
        return LLMTimeoutError(f"{model} timed out: {exc}")
    if isinstance(exc, openai.APIConnectionError):
        return TransientLLMError(f"{model}: connection failed: {exc}")
    if isinstance(exc, openai.APIStatusError):
        return error_for_status(
            exc.status_code,
            model,
            str(exc),
            "REAG_LLM_OPENAI_API_KEY",
            headers=getattr(exc.response, "headers", None),
        )
    return PermanentLLMError(f"{model}: unexpected error from the OpenAI SDK: {exc!r}")


def _usage(raw: Any) -> Usage:
    if raw is None:
        return Usage()
    details = getattr(raw, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0
    return Usage(
        prompt_tokens=raw.prompt_tokens or 0,
        completion_tokens=raw.completion_tokens or 0,
        cached_tokens=cached,
    )


def _is_logprob_refusal(exc: PermanentLLMError) -> bool:
    """A 400 from the API that names log-probabilities: the model does not give them."""
    cause = exc.__cause__
    return isinstance(cause, openai.BadRequestError) and "logprob" in str(cause).lower()


class OpenAIProvider:
    def __init__(
        self,
        model_name: str,
        *,
        api_key: str | None,
        base_url: str | None,
        timeout_s: float,
        client: AsyncOpenAI | None = None,
    ) -> None:
        if client is None and base_url is None and not api_key:
            raise ConfigurationError(
                f"openai:{model_name} needs an API key: set REAG_LLM_OPENAI_API_KEY (or "
                "OPENAI_API_KEY), or REAG_LLM_OPENAI_BASE_URL for a server that needs none"
            )
        self.model = f"openai:{model_name}"
        self.model_name = model_name
        self._compatible_server = base_url is not None
        self._reasoning = _REASONING.match(model_name) is not None
        self._client = client or AsyncOpenAI(
            api_key=api_key or "unused",
            base_url=base_url,
            timeout=timeout_s,
            max_retries=0,
        )
        self._label_probs = LogprobsThenSampling(
            self.model,
            request=self._request_logprobs,
            is_refusal=_is_logprob_refusal,
            chat=self.chat,
            # A reasoning model thinks before its label and takes no temperature.
            sampling_max_tokens=2048 if self._reasoning else 8,
            sampling_temperature=None if self._reasoning else SAMPLING_TEMPERATURE,
            # Reasoning models refuse log-probabilities: no point asking.
            refused=self._reasoning,
        )

    def _limits(self, max_tokens: int, temperature: float | None) -> dict[str, Any]:
        args: dict[str, Any] = {}
        # api.openai.com wants max_completion_tokens; compatible servers know max_tokens.
        args["max_tokens" if self._compatible_server else "max_completion_tokens"] = max_tokens
        if temperature is not None and not self._reasoning:
            args["temperature"] = temperature
        return args

    async def _create(self, **kwargs: Any) -> Any:
        try:
            return await self._client.chat.completions.create(model=self.model_name, **kwargs)
        except openai.OpenAIError as exc:
            raise map_openai_error(exc, self.model) from exc

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
        kwargs: dict[str, Any] = self._limits(max_tokens, temperature)
        kwargs["messages"] = [{"role": m.role, "content": m.content} for m in messages]
        if json_schema is not None:
            name = _SCHEMA_NAME.sub("_", str(json_schema.get("title", "output")))[:64] or "output"
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": json_schema, "strict": False},
            }
        if seed is not None:
            kwargs["seed"] = seed
        if stop:
            kwargs["stop"] = list(stop)
        response = await self._create(**kwargs)
        text = (response.choices[0].message.content or "") if response.choices else ""
        return ChatResult(
            text=text,
            model=self.model,
            usage=_usage(response.usage),
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
        """One token, greedy, with its top ``TOP_LOGPROBS`` alternatives."""
        kwargs = self._limits(1, 0.0)
        kwargs.update(
            messages=[{"role": m.role, "content": m.content} for m in messages],
            logprobs=True,
            top_logprobs=TOP_LOGPROBS,
        )
        response = await self._create(**kwargs)
        choice = response.choices[0] if response.choices else None
        content = getattr(getattr(choice, "logprobs", None), "content", None)
        alternatives = (
            [(alt.token, alt.logprob) for alt in content[0].top_logprobs or []] if content else []
        )
        return LogprobsReply(_usage(response.usage), alternatives)

    async def score_continuation(self, context: str, target: str) -> ContinuationScore:
        raise CapabilityError(
            f"{self.model} gives no log-probabilities of prompt tokens, so it cannot score a "
            f"continuation; use {SCORING_MODELS}"
        )

    async def aclose(self) -> None:
        await self._client.close()
