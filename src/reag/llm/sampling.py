"""Label probabilities from samples, for models that expose no token log-probabilities.

The REAG paper (section 3.4.1) approximates p(label | x) for black-box judges
by sampling the model N times at temperature 0.7 and taking the empirical
label frequency. Every sample is a billed call, and the result says so.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence

from reag.llm.base import ChatResult, LabelParseError, LabelProbs, Message, Usage

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
