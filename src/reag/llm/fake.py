"""A scripted provider for unit tests of mechanics. Never a default, never a result.

Each capability answers from a script: a callable that sees the request, or
a fixed value. Every call is recorded in ``calls`` so tests can assert on
what was sent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from reag.llm.base import (
    CapabilityError,
    ChatResult,
    ContinuationScore,
    LabelProbs,
    Message,
    Usage,
)

ChatScript = Callable[[Sequence[Message], dict[str, Any]], str]
LabelScript = Callable[[str | Sequence[Message], Sequence[str]], dict[str, float]]
ScoreScript = Callable[[str, str], list[float]]


@dataclass
class FakeCall:
    kind: str
    payload: Any
    options: dict[str, Any]


def _prompt_tokens(text: str) -> int:
    return max(1, len(text.split()))


@dataclass
class FakeProvider:
    """``model`` defaults to ``fake:scripted``; scripts default to harmless answers."""

    model: str = "fake:scripted"
    chat_script: ChatScript | None = None
    label_script: LabelScript | None = None
    score_script: ScoreScript | None = None
    calls: list[FakeCall] = field(default_factory=list)
    # False in long load runs, where a record of every call would only grow.
    record_calls: bool = True

    def _record(self, call: FakeCall) -> None:
        if self.record_calls:
            self.calls.append(call)

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
        options = {
            "temperature": temperature,
            "max_tokens": max_tokens,
            "json_schema": json_schema,
            "seed": seed,
            "stop": stop,
        }
        self._record(FakeCall("chat", list(messages), options))
        text = self.chat_script(messages, options) if self.chat_script else "OK"
        usage = Usage(sum(_prompt_tokens(m.content) for m in messages), _prompt_tokens(text))
        return ChatResult(text=text, model=self.model, usage=usage, latency_s=0.0)

    async def label_probs(
        self, prompt: str | Sequence[Message], labels: Sequence[str], *, n_samples: int = 5
    ) -> LabelProbs:
        self._record(FakeCall("label_probs", prompt, {"labels": list(labels)}))
        if self.label_script:
            probs = self.label_script(prompt, labels)
        else:
            probs = {label: 1.0 / len(labels) for label in labels}
        text = prompt if isinstance(prompt, str) else " ".join(m.content for m in prompt)
        return LabelProbs(
            probabilities=probs,
            method="logprobs",
            model=self.model,
            usage=Usage(_prompt_tokens(text), 1),
            latency_s=0.0,
        )

    async def score_continuation(self, context: str, target: str) -> ContinuationScore:
        self._record(FakeCall("score", (context, target), {}))
        if self.score_script is None:
            raise CapabilityError(f"{self.model} has no score script")
        logprobs = self.score_script(context, target)
        return ContinuationScore(
            mean_logprob=sum(logprobs) / len(logprobs),
            token_logprobs=logprobs,
            model=self.model,
            usage=Usage(_prompt_tokens(context) + len(logprobs), 0),
            latency_s=0.0,
        )

    async def aclose(self) -> None:
        return None
