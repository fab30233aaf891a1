"""The scripted models: every answer from a script, never from a model, never a result.

Two uses, one provider. ``FakeProvider`` is the scripted provider of unit tests
of mechanics: each capability answers from a script (a callable that sees the
request, or a fixed value) and every call is recorded in ``calls`` so a test
can assert on what was sent. ``scripted:<name>`` is the zero-latency model of
load and chaos runs: it measures reag's own overhead and losses, never a
verdict. Every answer it gives is a function of the request alone, so a
redelivered event gets the same answer and a killed service's replacement
writes what the first one would have. It is a ``FakeProvider`` with scripts for
every stage (the simulated user, the retriever's ICRALM ranking and
self-reasoning, the oracle, the judges' label probabilities); a structured
call whose schema no script knows is answered with the smallest object the
schema accepts.

The registry refuses ``scripted:`` models unless ``REAG_LLM_ALLOW_SCRIPTED`` is
set (``reag.llm.registry``) and ``fake:`` models always (tests construct
``LLMClient(FakeProvider(...))``); neither is ever a default, and the demo
refuses ``scripted:``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from reag.llm.base import (
    BatchLabelProvider,
    CapabilityError,
    ChatResult,
    ContinuationScore,
    LabelProbs,
    Message,
    Provider,
    Usage,
)
from reag.untrusted import fenced

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


SCRIPTED = "scripted"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
# The oracle's criteria per case: "n2" in ``scripted:n2`` sets it (1..7), else 2.
_CRITERIA = re.compile(r"(?:^|[-_.])n([1-7])(?:$|[-_.])")


def _digest(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("\x00".join(parts).encode()).digest()[:8], "big")


def _last_text(prompt: str | Sequence[Message]) -> str:
    """The case part of a prompt: judges put each annotator's examples first and the case
    last, so every annotator of one criterion sees the same last message and agrees."""
    if isinstance(prompt, str):
        return prompt
    return prompt[-1].content if prompt else ""


def _fill(schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    """The smallest value ``schema`` accepts (strings padded to their minimum length)."""
    if "$ref" in schema:
        return _fill(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return _fill(schema[key][0], defs)
    if "enum" in schema:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    return _fill_type(schema, defs)


def _fill_type(schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    kind = schema.get("type", "object")
    value: Any = None
    if kind == "object":
        properties = schema.get("properties", {})
        value = {name: _fill(properties[name], defs) for name in schema.get("required", [])}
    elif kind == "array":
        value = [_fill(schema.get("items", {}), defs) for _ in range(schema.get("minItems", 0))]
    elif kind == "string":
        length = max(int(schema.get("minLength", 0)), 1)
        value = ("scripted answer " * (length // 16 + 1))[:length].strip().ljust(length, "x")
    elif kind in ("integer", "number"):
        value = schema.get("minimum", 0)
    elif kind == "boolean":
        value = True
    return value


def _document_check(messages: Sequence[Message]) -> dict[str, Any]:
    """Every document relevant; its first sentence cited word for word."""
    bodies = fenced("untrusted_document", messages[-1].content if messages else "")
    first = _SENTENCE_END.split(bodies[0].strip())[0] if bodies else ""
    evidence = [{"sentence": first[:300], "why": "it applies"}] if first else []
    return {"relevant": True, "reason": "It constrains the answer.", "evidence": evidence}


# Claims of the scripted oracle: no two alike, so the oracle's repeat check keeps them all.
SCRIPTED_CLAIMS: tuple[tuple[str, str], ...] = (
    ("states", "the answer to the question asked"),
    ("recommends", "a next step that fits this user"),
    ("warns_about", "the limits that apply here"),
    ("refers_the_user_to", "a qualified person when in doubt"),
    ("does_not_state", "anything the documents contradict"),
    ("asks_for", "details missing from the request"),
    ("declines", "tasks outside its documented purpose"),
)
_SHOWN_ID = re.compile(r"^\[([^\]\n/]{1,100}/[^\]\n]{1,200})\]", re.MULTILINE)


def oracle_answer(
    messages: Sequence[Message],
    claims: Sequence[tuple[str, str]],
    *,
    objective: str = "Check that the answer fits the user and the documents.",
    in_scope: bool = True,
    concern: str = "correctness",
) -> str:
    """An ``OracleDraft`` JSON whose criteria (verb, object) cite the documents shown.

    The one way scripts and tests write an oracle: each criterion is the constrained
    form, and its source is a document id the prompt really showed (a criterion that
    cites none is dropped by the oracle's checks).
    """
    # A document opens with its "[kind/name]" id on a line of its own start (ids may hold
    # spaces); a content line that starts with a bracket seldom holds a slash.
    shown = _SHOWN_ID.findall(messages[-1].content if messages else "")
    sources = shown[:1] or ["unknown"]
    return json.dumps(
        {
            "TestObjective": objective,
            "RequestInScope": in_scope,
            "ExpectedResultsDescription": "The response does what the documents ask for.",
            "PassFailCriteria": [
                {
                    "concern": concern,
                    "rule": "The documents shown to the oracle.",
                    "sources": sources,
                    "verb": verb,
                    "object": obj,
                }
                for verb, obj in claims
            ],
        }
    )


class ScriptedModel:
    """The scripts of one ``scripted:<name>`` model."""

    def __init__(self, name: str) -> None:
        found = _CRITERIA.search(name)
        self.n_criteria = int(found.group(1)) if found else 2

    def chat(self, messages: Sequence[Message], options: dict[str, Any]) -> str:
        schema = options.get("json_schema")
        if not schema:
            return "A scripted answer."
        title = schema.get("title", "")
        if title == "DocumentCheck":
            return json.dumps(_document_check(messages))
        if title == "ApplicationAnalysis":
            return json.dumps({"analysis": "The user needs advice that fits their condition."})
        if title == "OracleDraft":
            return oracle_answer(messages, SCRIPTED_CLAIMS[: self.n_criteria])
        if title in ("SimulatedProfileDraft", "SimulatedUserDraft"):
            draft = {
                "profile": "A 58-year-old on dialysis who limits potassium.",
                "situation": "At the shop, reading a label before buying a drink.",
            }
            if title == "SimulatedUserDraft":
                draft["query"] = "Can I drink this?"
            return json.dumps(draft)
        return json.dumps(_fill(schema, schema.get("$defs", {})))

    def labels(self, prompt: str | Sequence[Message], labels: Sequence[str]) -> dict[str, float]:
        """A sure answer, the first label for about two criteria in three, from the case part."""
        if not labels:
            return {}
        sure = 0.97 if len(labels) > 1 else 1.0
        rest = (1.0 - sure) / max(1, len(labels) - 1)
        pick = 0 if _digest(_last_text(prompt)) % 3 else len(labels) - 1
        return {label: sure if i == pick else rest for i, label in enumerate(labels)}

    def score(self, context: str, target: str) -> list[float]:
        """A log-probability per word of ``target``, fixed by the context's opening."""
        words = target.split() or [target]
        head = context[:400]
        return [-0.5 - (_digest(head, word) % 1000) / 500 for word in words]


def scripted_provider(model: str) -> FakeProvider:
    """The provider of ``scripted:<name>`` (the registry checks the switch first)."""
    _, _, name = model.partition(":")
    scripts = ScriptedModel(name)
    return FakeProvider(
        model=model,
        chat_script=scripts.chat,
        label_script=scripts.labels,
        score_script=scripts.score,
        record_calls=False,
    )


LatencyDist = str  # "fixed" | "exponential" | "lognormal" (LLMSettings.scripted_latency_dist)


def latency_draw(seconds: float, dist: LatencyDist, rng: random.Random) -> Callable[[], float]:
    """Seconds for the next call: ``seconds`` itself, or drawn with that mean (exponential)
    or median (lognormal, sigma 0.5, the long tail of a hosted API)."""
    if seconds <= 0:
        return lambda: 0.0
    if dist == "exponential":
        return lambda: rng.expovariate(1.0 / seconds)
    if dist == "lognormal":
        return lambda: seconds * rng.lognormvariate(0.0, 0.5)
    return lambda: seconds


class LatentProvider:
    """A scripted provider whose every call first waits a hosted model's round trip.

    The wait is in the calling client, inside its concurrency slot, so many calls wait at
    once as they would on a remote API; the answer still comes from the script (in process,
    or from the model server, which answers a script at once)."""

    def __init__(self, inner: Provider, draw: Callable[[], float]) -> None:
        self.inner = inner
        self.model = inner.model
        self._draw = draw

    async def _wait(self) -> float:
        seconds = self._draw()
        await asyncio.sleep(seconds)
        return seconds

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
        waited = await self._wait()
        result = await self.inner.chat(
            messages,
            temperature=temperature,
            max_tokens=max_tokens,
            json_schema=json_schema,
            seed=seed,
            stop=stop,
        )
        return dataclasses.replace(result, latency_s=result.latency_s + waited)

    async def label_probs(
        self, prompt: str | Sequence[Message], labels: Sequence[str], *, n_samples: int = 5
    ) -> LabelProbs:
        waited = await self._wait()
        result = await self.inner.label_probs(prompt, labels, n_samples=n_samples)
        return dataclasses.replace(result, latency_s=result.latency_s + waited)

    async def label_probs_many(
        self,
        prompts: Sequence[str | Sequence[Message]],
        labels: Sequence[str],
        *,
        n_samples: int = 5,
    ) -> list[LabelProbs]:
        """One round trip for the group (a hosted API's calls of one group run at once)."""
        waited = await self._wait()
        if isinstance(self.inner, BatchLabelProvider):
            results = await self.inner.label_probs_many(prompts, labels, n_samples=n_samples)
        else:
            results = [
                await self.inner.label_probs(p, labels, n_samples=n_samples) for p in prompts
            ]
        return [dataclasses.replace(r, latency_s=r.latency_s + waited) for r in results]

    async def score_continuation(self, context: str, target: str) -> ContinuationScore:
        waited = await self._wait()
        result = await self.inner.score_continuation(context, target)
        return dataclasses.replace(result, latency_s=result.latency_s + waited)

    async def aclose(self) -> None:
        await self.inner.aclose()
