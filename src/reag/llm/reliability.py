"""What keeps LLM calls from failing the pipeline on a bad minute.

Retries with exponential backoff and jitter for the errors that pass
(rate limits, timeouts, 5xx, dropped connections), a time limit per attempt,
and a cap on calls in flight per provider so that a burst of judge requests
does not turn into a burst of 429s.
"""

from __future__ import annotations

import asyncio
import math
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager

from aiolimiter import AsyncLimiter
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential_jitter,
)
from tenacity.wait import wait_base

from reag.llm.base import Message, RateLimitedError, TransientLLMError


class ConcurrencyLimiter:
    """At most ``limit`` calls in flight, counted per event loop.

    An ``asyncio.Semaphore`` belongs to one loop; a provider shared by a
    process may be used from several (tests, a CLI calling ``asyncio.run``
    twice), so each loop gets its own.
    """

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("a concurrency limit must be at least 1")
        self.limit = limit
        self._semaphores: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, asyncio.Semaphore
        ] = weakref.WeakKeyDictionary()

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            semaphore = self._semaphores[loop] = asyncio.Semaphore(self.limit)
        async with semaphore:
            yield


class RateLimit:
    """A provider's requests and tokens per minute, this process's share of them.

    Providers limit an account or a deployment, not a process: the limit set
    (``REAG_LLM_REQUESTS_PER_MINUTE``, ``REAG_LLM_TOKENS_PER_MINUTE``) is for every
    replica together, and each process takes ``1 / replicas`` of it
    (``REAG_LLM_REPLICAS``: the most processes that call the model at once, the
    autoscaler's maximum). Fewer live replicas then use less than the limit, never
    more, with no store to ask on every call. A leaky bucket per limit (aiolimiter),
    one per event loop, as ``ConcurrencyLimiter``'s semaphores.
    """

    def __init__(
        self,
        requests_per_minute: float | None,
        tokens_per_minute: float | None,
        *,
        replicas: int = 1,
    ) -> None:
        if replicas < 1:
            raise ValueError("at least one replica shares a rate limit")
        self.requests_per_minute = requests_per_minute / replicas if requests_per_minute else None
        self.tokens_per_minute = tokens_per_minute / replicas if tokens_per_minute else None
        self._buckets: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[AsyncLimiter | None, AsyncLimiter | None]
        ] = weakref.WeakKeyDictionary()

    @property
    def limited(self) -> bool:
        return self.requests_per_minute is not None or self.tokens_per_minute is not None

    async def admit(self, tokens: int) -> None:
        """Wait until one more request of about ``tokens`` tokens fits this minute."""
        if not self.limited:
            return
        loop = asyncio.get_running_loop()
        buckets = self._buckets.get(loop)
        if buckets is None:
            rpm, tpm = self.requests_per_minute, self.tokens_per_minute
            buckets = self._buckets[loop] = (
                AsyncLimiter(rpm, 60.0) if rpm else None,
                AsyncLimiter(tpm, 60.0) if tpm else None,
            )
        requests, token_bucket = buckets
        if requests is not None:
            await requests.acquire()
        if token_bucket is not None:
            # A request larger than a minute's share waits for a whole minute's tokens.
            await token_bucket.acquire(min(float(max(tokens, 1)), token_bucket.max_rate))


def estimated_tokens(prompt: str | Sequence[Message] | None, max_tokens: int) -> int:
    """A request's tokens before it is sent, for the tokens-per-minute bucket: about four
    characters a token in the prompt, plus the completion it may use."""
    if prompt is None:
        chars = 0
    elif isinstance(prompt, str):
        chars = len(prompt)
    else:
        chars = sum(len(message.content) for message in prompt)
    return math.ceil(chars / 4) + max(max_tokens, 0)


def retrying(
    *,
    max_retries: int,
    initial_s: float,
    max_s: float,
    on_retry: Callable[[BaseException], None],
) -> AsyncRetrying:
    """Retry only ``TransientLLMError``; the last error is re-raised as itself."""

    def before_sleep(state: RetryCallState) -> None:
        if state.outcome is not None and state.outcome.failed:
            error = state.outcome.exception()
            if error is not None:
                on_retry(error)

    return AsyncRetrying(
        stop=stop_after_attempt(max_retries + 1),
        wait=HonourRetryAfter(
            wait_exponential_jitter(initial=initial_s, max=max_s, jitter=initial_s), max_s
        ),
        retry=retry_if_exception_type(TransientLLMError),
        before_sleep=before_sleep,
        reraise=True,
    )


class HonourRetryAfter(wait_base):
    """The backoff's delay, or longer when a 429 said how long to wait (its
    ``Retry-After``), capped at ``max_s``: retrying sooner than asked only earns
    another 429, and a provider that asks for an hour is a fault, not a wait."""

    def __init__(self, backoff: wait_base, max_s: float) -> None:
        self.backoff = backoff
        self.max_s = max_s

    def __call__(self, retry_state: RetryCallState) -> float:
        delay = self.backoff(retry_state)
        outcome = retry_state.outcome
        error = outcome.exception() if outcome is not None and outcome.failed else None
        if isinstance(error, RateLimitedError) and error.retry_after_s is not None:
            delay = max(delay, min(error.retry_after_s, self.max_s))
        return delay
