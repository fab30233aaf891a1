"""``LLMClient``: the object every stage holds to call a model.

It wraps one ``Provider`` and adds what every call needs regardless of vendor:
pricing and accounting per caller (service, tier), retries with backoff on
transient errors, a per-provider concurrency limit, a spend budget, and
structured output with one bounded repair attempt.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from reag.llm.base import (
    ChatResult,
    ContinuationScore,
    LabelProbs,
    Message,
    Provider,
    StructuredOutputError,
    Usage,
)

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is paying: costs and metrics are broken down by these labels."""

    service: str = "cli"
    tier: str = ""  # "1", "2", "3" for judges; "" elsewhere


@dataclass(frozen=True, slots=True)
class StructuredResult(Generic[T]):
    value: T
    raw: str
    repaired: bool
    usage: Usage
    cost_usd: float
    latency_s: float
    n_calls: int


class LLMClient:
    """Accounting, reliability and structured output around one provider.

    This first version delegates directly; the LLM-layer work replaces the
    body of ``_call`` with retries, budget, concurrency and pricing without
    changing the public methods below.
    """

    def __init__(self, provider: Provider, caller: Caller | None = None) -> None:
        self.provider = provider
        self.caller = caller or Caller()

    @property
    def model(self) -> str:
        return self.provider.model

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int = 512,
        seed: int | None = None,
        stop: Sequence[str] | None = None,
    ) -> ChatResult:
        return await self.provider.chat(
            messages, temperature=temperature, max_tokens=max_tokens, seed=seed, stop=stop
        )

    async def structured(
        self,
        messages: Sequence[Message],
        schema: type[T],
        *,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        seed: int | None = None,
    ) -> StructuredResult[T]:
        """Chat constrained to ``schema``'s JSON schema, parsed into ``schema``.

        Broken JSON gets exactly one repair attempt (the model is shown its
        output and the parse error); after that ``StructuredOutputError`` with
        the raw text.
        """
        json_schema: dict[str, Any] = schema.model_json_schema()
        first = await self.provider.chat(
            messages, temperature=temperature, max_tokens=max_tokens,
            json_schema=json_schema, seed=seed,
        )
        try:
            value = schema.model_validate_json(first.text)
            return StructuredResult(value, first.text, False, first.usage, first.cost_usd,
                                    first.latency_s, 1)
        except ValidationError as exc:
            error = str(exc)
        repair = [
            *messages,
            Message("assistant", first.text),
            Message(
                "user",
                "That output is not valid JSON for the required schema. Error:\n"
                f"{error}\nReply with only the corrected JSON object, matching this schema:\n"
                f"{json.dumps(json_schema)}",
            ),
        ]
        second = await self.provider.chat(
            repair, temperature=0.0, max_tokens=max_tokens, json_schema=json_schema, seed=seed
        )
        usage = first.usage + second.usage
        try:
            value = schema.model_validate_json(second.text)
        except ValidationError as exc:
            raise StructuredOutputError(
                f"{self.model} returned output that does not match {schema.__name__} "
                f"after one repair attempt: {exc.errors()[0]['msg']}",
                raw=second.text,
            ) from exc
        return StructuredResult(value, second.text, True, usage,
                                first.cost_usd + second.cost_usd,
                                first.latency_s + second.latency_s, 2)

    async def label_probs(
        self, prompt: str | Sequence[Message], labels: Sequence[str], *, n_samples: int = 5
    ) -> LabelProbs:
        return await self.provider.label_probs(prompt, labels, n_samples=n_samples)

    async def label_probs_many(
        self, prompts: Sequence[str | Sequence[Message]], labels: Sequence[str],
        *, n_samples: int = 5,
    ) -> list[LabelProbs]:
        """One call per prompt, in order, so a local backend can reuse a shared prefix."""
        return [await self.label_probs(p, labels, n_samples=n_samples) for p in prompts]

    async def score_continuation(self, context: str, target: str) -> ContinuationScore:
        return await self.provider.score_continuation(context, target)

    async def aclose(self) -> None:
        await self.provider.aclose()
