"""What every requirements agent shares: one client, its settings, and the run log.

Each agent is a plain object around an ``LLMClient`` so that it can be tested
alone with ``FakeProvider``. Every call, failed or not, lands in the run log
with its input, output, tokens, cost and wall time.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, TypeVar

from pydantic import BaseModel

from reag.drafting.runlog import AgentName, RunLog
from reag.drafting.settings import AgentSettings
from reag.llm.base import LLMError, Message, StructuredOutputError
from reag.llm.client import LLMClient

T = TypeVar("T", bound=BaseModel)


@dataclass
class RunContext:
    """Shared by the agents of one run: the log, and the refinement round in progress."""

    log: RunLog = field(default_factory=RunLog)
    round: int = 0
    seed: int | None = None


class Agent:
    name: ClassVar[AgentName]

    def __init__(
        self, client: LLMClient, settings: AgentSettings, context: RunContext | None = None
    ) -> None:
        self.client = client
        self.settings = settings
        self.context = context or RunContext()

    async def _chat(
        self, purpose: str, messages: Sequence[Message], settings: AgentSettings | None = None
    ) -> str:
        """Plain-text call, logged; an LLM error is logged, then raised."""
        cfg = settings or self.settings
        started = time.perf_counter()
        try:
            result = await self.client.chat(
                messages,
                temperature=cfg.temperature,
                max_tokens=cfg.max_tokens,
                seed=self.context.seed,
            )
        except LLMError as exc:
            self._record(purpose, messages, cfg, "", started, error=f"{type(exc).__name__}: {exc}")
            raise
        self._record(
            purpose,
            messages,
            cfg,
            result.text,
            started,
            prompt_tokens=result.usage.prompt_tokens,
            completion_tokens=result.usage.completion_tokens,
            cached_tokens=result.usage.cached_tokens,
            cost_usd=result.cost_usd,
            n_calls=result.n_calls,
        )
        return result.text

    async def _structured(
        self,
        purpose: str,
        messages: Sequence[Message],
        schema: type[T],
        settings: AgentSettings | None = None,
    ) -> T:
        """Structured call (one repair attempt inside the client), logged; errors raised."""
        cfg = settings or self.settings
        started = time.perf_counter()
        try:
            result = await self.client.structured(
                messages,
                schema,
                temperature=cfg.temperature,
                max_tokens=cfg.max_tokens,
                seed=self.context.seed,
            )
        except StructuredOutputError as exc:
            self._record(
                purpose,
                messages,
                cfg,
                exc.raw,
                started,
                n_calls=2,
                error=f"StructuredOutputError: {exc}",
            )
            raise
        except LLMError as exc:
            self._record(purpose, messages, cfg, "", started, error=f"{type(exc).__name__}: {exc}")
            raise
        self._record(
            purpose,
            messages,
            cfg,
            result.raw,
            started,
            prompt_tokens=result.usage.prompt_tokens,
            completion_tokens=result.usage.completion_tokens,
            cached_tokens=result.usage.cached_tokens,
            cost_usd=result.cost_usd,
            n_calls=result.n_calls,
        )
        return result.value

    def _record(
        self,
        purpose: str,
        messages: Sequence[Message],
        cfg: AgentSettings,
        output: str,
        started: float,
        *,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        cached_tokens: int = 0,
        cost_usd: float = 0.0,
        n_calls: int = 1,
        error: str | None = None,
    ) -> None:
        self.context.log.record(
            agent=self.name,
            purpose=purpose,
            round_=self.context.round,
            model=self.client.model,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            messages=list(messages),
            output=output,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cached_tokens=cached_tokens,
            cost_usd=cost_usd,
            seconds=time.perf_counter() - started,
            n_calls=n_calls,
            error=error,
        )
