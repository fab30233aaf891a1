"""The one interface every stage of reag uses to talk to a language model.

A provider implements three capabilities (chat, label probabilities,
continuation scoring). Callers never use a provider directly: they hold an
``LLMClient`` (``reag.llm.client``), which adds accounting, retries, a spend
budget and structured output on top.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens of one or more calls. ``cached_tokens`` are prompt tokens served from a cache."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cached_tokens + other.cached_tokens,
        )


@dataclass(frozen=True, slots=True)
class ChatResult:
    text: str
    model: str
    usage: Usage
    latency_s: float
    cost_usd: float = 0.0
    n_calls: int = 1


LabelMethod = Literal["logprobs", "sampling"]


@dataclass(frozen=True, slots=True)
class LabelProbs:
    """A probability per label of a closed label set; they sum to 1.

    ``method`` says where the numbers came from: the model's token
    log-probabilities restricted to the label tokens and renormalised, or the
    empirical label frequency over ``n_samples`` samples at temperature 0.7.
    """

    probabilities: dict[str, float]
    method: LabelMethod
    model: str
    usage: Usage
    latency_s: float
    cost_usd: float = 0.0
    n_samples: int = 0
    n_calls: int = 1
    # Probability mass the model put on the label tokens before renormalising
    # (logprobs method only): a low value means the prompt did not make the
    # model answer with a label, and the renormalised numbers mean little.
    label_mass: float | None = None

    @property
    def top(self) -> tuple[str, float]:
        label = max(self.probabilities, key=lambda k: self.probabilities[k])
        return label, self.probabilities[label]


@dataclass(frozen=True, slots=True)
class ContinuationScore:
    """log p(target | context), token by token: the ICRALM kernel (REAG eq. 2)."""

    mean_logprob: float
    token_logprobs: list[float]
    model: str
    usage: Usage
    latency_s: float
    cost_usd: float = 0.0
    target_token_ids: list[int] = field(default_factory=list)

    @property
    def n_tokens(self) -> int:
        return len(self.token_logprobs)


class LLMError(Exception):
    """Base class of every error the LLM layer raises."""


class TransientLLMError(LLMError):
    """Worth retrying: rate limit, timeout, 5xx, connection reset."""


class RateLimitedError(TransientLLMError):
    """A 429. ``retry_after_s``: how long the provider asked us to wait (its
    ``Retry-After``), which the client's backoff honours, up to its longest delay."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


def retry_after_seconds(
    headers: Mapping[str, str] | None, *, now: datetime | None = None
) -> float | None:
    """The wait a response's headers ask for: ``retry-after-ms`` (OpenAI's), else
    ``Retry-After`` as seconds or as an HTTP date (RFC 9110, 10.2.3); None if absent or
    unreadable, never negative."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    try:
        if "retry-after-ms" in lowered:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000.0)
        value = lowered.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = parsedate_to_datetime(value)
            return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
    except (TypeError, ValueError, OverflowError):
        return None


class LLMTimeoutError(TransientLLMError):
    pass


class PermanentLLMError(LLMError):
    """Retrying will not help: bad request, auth failure, unknown model."""


class InvalidRequestError(PermanentLLMError):
    """The request itself is wrong (empty target, prompt longer than the context window, ...)."""


class ConfigurationError(PermanentLLMError):
    """Settings make the call impossible: unknown provider, missing key, unpriced model."""


class CapabilityError(PermanentLLMError):
    """The provider cannot do what was asked (e.g. prompt-token log-probabilities)."""


class BudgetExceededError(LLMError):
    """The configured spend budget is used up; no further calls are made."""


class LabelParseError(LLMError):
    """No sample named one of the labels, so no label probabilities can be estimated.

    ``samples`` keeps the model's replies for the dead-letter reason.
    """

    def __init__(self, message: str, samples: Sequence[str]) -> None:
        super().__init__(message)
        self.samples = list(samples)


class StructuredOutputError(LLMError):
    """The model's output did not parse against the schema, even after the repair attempt.

    ``raw`` keeps the model's last text so the caller can dead-letter it with the reason.
    """

    def __init__(self, message: str, raw: str) -> None:
        super().__init__(message)
        self.raw = raw


def error_for_status(
    status: int,
    model: str,
    detail: str,
    key_setting: str,
    *,
    headers: Mapping[str, str] | None = None,
) -> LLMError:
    """The error type for an HTTP status from a vendor API: retry what may pass.
    ``headers``: the response's, for a 429's ``Retry-After``."""
    if status == 429:
        return RateLimitedError(
            f"{model} is rate limited (429): {detail}", retry_after_seconds(headers)
        )
    if status == 408:
        return LLMTimeoutError(f"{model} timed out (408): {detail}")
    if status == 409 or status >= 500:
        return TransientLLMError(f"{model} failed with HTTP {status}: {detail}")
    if status in (401, 403):
        return PermanentLLMError(f"{model} refused the key (HTTP {status}); check {key_setting}")
    return PermanentLLMError(f"{model} rejected the request (HTTP {status}): {detail}")


@runtime_checkable
class Provider(Protocol):
    """What a backend must implement. Costs are left at 0 here; the client prices calls."""

    model: str  # the full model string, e.g. "local:gemma-3-270m", "openai:gpt-4.1-mini"

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
        """``json_schema``: constrain decoding to it where the backend can, else ask for JSON."""
        ...

    async def label_probs(
        self,
        prompt: str | Sequence[Message],
        labels: Sequence[str],
        *,
        n_samples: int = 5,
    ) -> LabelProbs:
        """Probability of each label as the model's next answer.

        Uses token log-probabilities when the backend exposes them, else ``n_samples``
        samples at temperature 0.7 (the result's ``method`` says which).
        A plain-string prompt is a raw completion prompt (base models);
        a message list is a chat.
        """
        ...

    async def score_continuation(self, context: str, target: str) -> ContinuationScore:
        """Exact log-probabilities of ``target``'s tokens after ``context``.

        Tokenized as context ids (with BOS) followed by target ids (without BOS).
        Raises ``CapabilityError`` naming the models that can, if the backend cannot.
        """
        ...

    async def aclose(self) -> None: ...


@runtime_checkable
class BatchLabelProvider(Protocol):
    """A provider that takes a group of label-probability prompts as one request.

    The simulated annotators of one criterion share most of their prompt; a
    local model keeps them together so each reuses the shared prefix's KV
    cache instead of interleaving with other callers' prompts.
    """

    async def label_probs_many(
        self,
        prompts: Sequence[str | Sequence[Message]],
        labels: Sequence[str],
        *,
        n_samples: int = 5,
    ) -> list[LabelProbs]: ...
