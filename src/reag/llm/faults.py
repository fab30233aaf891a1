"""A provider that fails on purpose, for fault runs: 429s, 500s, timeouts, broken JSON.

Wraps any ``Provider`` (a scripted one in tests and ``make chaos``): each call
draws at most one fault from ``FaultRates``. Rate limits and server errors are
raised as the vendor clients raise them; a timeout hangs until the client's
per-attempt limit ends it, as a stalled server would; truncated and malformed
output return the inner provider's text cut in half or replaced by prose with
a broken object. Used only in tests and chaos runs, never by a setting of a
service: it measures reag's own retries, repair and dead letters, not a model.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from reag.llm.base import (
    ChatResult,
    ContinuationScore,
    LabelProbs,
    Message,
    Provider,
    RateLimitedError,
    TransientLLMError,
)

FaultKind = Literal["rate_limit", "server_error", "timeout", "truncated", "malformed", "ok"]
TRANSIENT_FAULTS: frozenset[FaultKind] = frozenset({"rate_limit", "server_error", "timeout"})
_FAULT_ORDER: tuple[FaultKind, ...] = (
    "rate_limit",
    "server_error",
    "timeout",
    "truncated",
    "malformed",
)
MALFORMED_TEXT = 'Sure! Here is the JSON you asked for: {"TestObjective": oops'


@dataclass(frozen=True, slots=True)
class FaultRates:
    """Probability of each fault per call; they must sum to at most 1."""

    rate_limit: float = 0.0
    server_error: float = 0.0
    timeout: float = 0.0
    truncated: float = 0.0
    malformed: float = 0.0

    def __post_init__(self) -> None:
        values = dataclasses.astuple(self)
        if any(v < 0 for v in values) or sum(values) > 1:
            raise ValueError(f"fault rates must be >= 0 and sum to <= 1, got {self}")


class FaultyProvider:
    """``inner`` with faults drawn from ``rates`` (seeded); ``log`` keeps every call's draw."""

    def __init__(
        self,
        inner: Provider,
        rates: FaultRates,
        *,
        seed: int | None = None,
        hang_s: float = 3600.0,
    ) -> None:
        self.inner = inner
        self.model = inner.model
        self.rates = rates
        self.hang_s = hang_s
        self.log: list[FaultKind] = []
        self._random = random.Random(seed)

    @property
    def counts(self) -> Counter[FaultKind]:
        return Counter(self.log)

    def _draw(self, allowed: frozenset[FaultKind] | None = None) -> FaultKind:
        roll = self._random.random()
        for kind in _FAULT_ORDER:
            rate = getattr(self.rates, kind)
            if roll < rate:
                if allowed is None or kind in allowed:
                    self.log.append(kind)
                    return kind
                break
            roll -= rate
        self.log.append("ok")
        return "ok"

    async def _transient(self, kind: FaultKind) -> None:
        if kind == "rate_limit":
            raise RateLimitedError(f"{self.model} is rate limited (429, injected)")
        if kind == "server_error":
            raise TransientLLMError(f"{self.model} failed with HTTP 500 (injected)")
        if kind == "timeout":
            await asyncio.sleep(self.hang_s)  # the client's time limit ends the attempt

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
        kind = self._draw()
        await self._transient(kind)
        result = await self.inner.chat(
            messages,
            temperature=temperature,
            max_tokens=max_tokens,
            json_schema=json_schema,
            seed=seed,
            stop=stop,
        )
        if kind == "truncated":
            return dataclasses.replace(result, text=result.text[: len(result.text) // 2])
        if kind == "malformed":
            return dataclasses.replace(result, text=MALFORMED_TEXT)
        return result

    async def label_probs(
        self, prompt: str | Sequence[Message], labels: Sequence[str], *, n_samples: int = 5
    ) -> LabelProbs:
        await self._transient(self._draw(TRANSIENT_FAULTS))
        return await self.inner.label_probs(prompt, labels, n_samples=n_samples)

    async def score_continuation(self, context: str, target: str) -> ContinuationScore:
        await self._transient(self._draw(TRANSIENT_FAULTS))
        return await self.inner.score_continuation(context, target)

    async def aclose(self) -> None:
        await self.inner.aclose()
