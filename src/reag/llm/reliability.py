"""What keeps LLM calls from failing the pipeline on a bad minute.

Retries with exponential backoff and jitter for the errors that pass
(rate limits, timeouts, 5xx, dropped connections), a time limit per attempt,
and a cap on calls in flight per provider so that a burst of judge requests
does not turn into a burst of 429s.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential_jitter,
)
from tenacity.wait import wait_base

from reag.llm.base import RateLimitedError, TransientLLMError


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
