"""Label probabilities from samples, for models that expose no token log-probabilities.

The REAG paper (section 3.4.1) approximates p(label | x) for black-box judges
by sampling the model N times at temperature 0.7 and taking the empirical
label frequency. Every sample is a billed call, and the result says so.

Hosted providers (OpenAI, Gemini) may or may not return the first answer
token's top log-probabilities; ``LogprobsThenSampling`` is the one flow they
share: ask for log-probabilities, sum them per label, and fall back to
sampling when none of the labels is among them or the model refuses them
(remembered, so a refusing model is not asked again). Each provider supplies
only its own request and its own refusal test.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

from reag.llm.base import (
    ChatResult,
    LabelParseError,
    LabelProbs,
    Message,
    PermanentLLMError,
    Usage,
)

SAMPLING_TEMPERATURE = 0.7

ChatFn = Callable[..., Awaitable[ChatResult]]

_LEADING_NOISE = " \t\r\n*_`'\"([{:>#-"


def as_messages(prompt: str | Sequence[Message]) -> list[Message]:
    """A plain-string prompt becomes one user turn for chat-only backends."""
    if isinstance(prompt, str):
        return [Message("user", prompt)]
    return list(prompt)


def match_label(reply: str, labels: Sequence[str]) -> str | None:
    """The label a reply opens with, case-insensitively, or None.

    Leading markup (quotes, bold, bullets) is skipped; a label must end at a
    word boundary so that "NOTE" is not read as "NO". The longest label wins.
    """
    text = reply.lstrip(_LEADING_NOISE).upper()
    found: str | None = None
    for label in labels:
        key = label.upper()
        if not text.startswith(key):
            continue
        rest = text[len(key) :]
        if rest and (rest[0].isalnum() or rest[0] == "_"):
            continue
        if found is None or len(label) > len(found):
            found = label
    return found


async def label_probs_by_sampling(
    chat: ChatFn,
    model: str,
    prompt: str | Sequence[Message],
    labels: Sequence[str],
    n_samples: int,
    *,
    max_tokens: int = 8,
    temperature: float | None = SAMPLING_TEMPERATURE,
    prior_usage: Usage | None = None,
    prior_calls: int = 0,
) -> LabelProbs:
    """Empirical label frequencies over ``n_samples`` chat samples.

    ``prior_usage``/``prior_calls`` carry a failed log-probability attempt so
    that its tokens are charged too. Samples that name no label are left out
    of the frequencies; if none names one, ``LabelParseError`` keeps them all.
    ``temperature=None`` leaves the model's own (for models that accept no other).
    """
    if n_samples < 1:
        raise ValueError("n_samples must be at least 1")
    started = time.perf_counter()
    messages = as_messages(prompt)
    kwargs: dict[str, object] = {"max_tokens": max_tokens}
    if temperature is not None:
        kwargs["temperature"] = temperature
    results = await asyncio.gather(*(chat(messages, **kwargs) for _ in range(n_samples)))
    usage = prior_usage or Usage()
    counts = dict.fromkeys(labels, 0)
    for result in results:
        usage = usage + result.usage
        label = match_label(result.text, labels)
        if label is not None:
            counts[label] += 1
    named = sum(counts.values())
    if named == 0:
        raise LabelParseError(
            f"{model}: none of {n_samples} samples began with one of {list(labels)}; "
            "make the prompt ask for exactly one label as the first word",
            [r.text for r in results],
        )
    return LabelProbs(
        probabilities={label: count / named for label, count in counts.items()},
        method="sampling",
        model=model,
        usage=usage,
        latency_s=time.perf_counter() - started,
        n_samples=n_samples,
        n_calls=prior_calls + n_samples,
    )


@dataclass(frozen=True, slots=True)
class LogprobsReply:
    """A provider's answer to a log-probability request, in provider-neutral terms.

    ``alternatives`` are the first answer token's top candidates as
    (token text, natural-log probability); empty when the reply had none.
    """

    usage: Usage
    alternatives: Sequence[tuple[str, float]]


LogprobsRequest = Callable[[list[Message]], Awaitable[LogprobsReply]]
RefusalCheck = Callable[[PermanentLLMError], bool]


def label_mass(
    alternatives: Iterable[tuple[str, float]], labels: Sequence[str]
) -> tuple[float, dict[str, float]] | None:
    """The probability mass on the labels and the renormalised label distribution.

    A label collects every alternative that spells it (stripped,
    case-insensitive: " yes" and "Yes" are both YES). None when no
    alternative names a label, so the caller can fall back to sampling.
    """
    keys = {label.strip().lower(): label for label in labels}
    mass = dict.fromkeys(labels, 0.0)
    for token, logprob in alternatives:
        label = keys.get(token.strip().lower())
        if label is not None:
            mass[label] += math.exp(logprob)
    total = sum(mass.values())
    if total <= 0:
        return None
    return total, {label: m / total for label, m in mass.items()}


class LogprobsThenSampling:
    """``label_probs`` for a provider whose log-probabilities may be missing or refused.

    ``request`` sends the prompt asking for the first token's top
    log-probabilities; ``is_refusal`` tells a refusal of log-probabilities
    from any other permanent error (which propagates). After a refusal only
    sampling is used. The sampling fallback is charged the tokens of a
    log-probability attempt that answered without a label.
    """

    def __init__(
        self,
        model: str,
        *,
        request: LogprobsRequest,
        is_refusal: RefusalCheck,
        chat: ChatFn,
        sampling_max_tokens: int,
        sampling_temperature: float | None = SAMPLING_TEMPERATURE,
        refused: bool = False,
    ) -> None:
        self.model = model
        self.refused = refused
        self._request = request
        self._is_refusal = is_refusal
        self._chat = chat
        self._sampling_max_tokens = sampling_max_tokens
        self._sampling_temperature = sampling_temperature

    async def __call__(
        self, prompt: str | Sequence[Message], labels: Sequence[str], n_samples: int
    ) -> LabelProbs:
        started = time.perf_counter()
        usage = Usage()
        calls = 0
        if not self.refused:
            try:
                reply = await self._request(as_messages(prompt))
            except PermanentLLMError as exc:
                if not self._is_refusal(exc):
                    raise
                self.refused = True
            else:
                calls = 1
                usage = reply.usage
                probs = label_mass(reply.alternatives, labels)
                if probs is not None:
                    mass, normalised = probs
                    return LabelProbs(
                        probabilities=normalised,
                        method="logprobs",
                        model=self.model,
                        usage=usage,
                        latency_s=time.perf_counter() - started,
                        label_mass=mass,
                    )
        return await label_probs_by_sampling(
            self._chat,
            self.model,
            prompt,
            labels,
            n_samples,
            max_tokens=self._sampling_max_tokens,
            temperature=self._sampling_temperature,
            prior_usage=usage,
            prior_calls=calls,
        )
