"""Retries, time limits and the concurrency limit of LLMClient, on a scripted provider."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import REGISTRY

from reag.llm.accounting import Caller, CostLedger
from reag.llm.base import (
    ChatResult,
    LLMTimeoutError,
    Message,
    PermanentLLMError,
    RateLimitedError,
    TransientLLMError,
    Usage,
    retry_after_seconds,
)
from reag.llm.client import LLMClient
from reag.llm.reliability import ConcurrencyLimiter, RateLimit, estimated_tokens
from reag.llm.scripted import FakeProvider
from reag.llm.settings import LLMSettings

HELLO = [Message("user", "hello")]


def failing_then_ok(failures: list[Exception]) -> Any:
    def script(_messages: Sequence[Message], _options: dict[str, Any]) -> str:
        if failures:
            raise failures.pop(0)
        return "fine"

    return script


def retries_seen(model: str, reason: str) -> float:
    value = REGISTRY.get_sample_value("reag_llm_retries_total", {"model": model, "reason": reason})
    return value or 0.0


async def test_two_rate_limits_then_success_returns_the_answer(
    llm_settings: LLMSettings, ledger: CostLedger
) -> None:
    provider = FakeProvider(
        model="fake:retry-ok",
        chat_script=failing_then_ok([RateLimitedError("429"), RateLimitedError("429")]),
    )
    client = LLMClient(provider, Caller("judge", "1"), settings=llm_settings, ledger=ledger)
    before = retries_seen("fake:retry-ok", "RateLimitedError")

    result = await client.chat(HELLO)

    assert result.text == "fine"
    assert len(provider.calls) == 3
    assert retries_seen("fake:retry-ok", "RateLimitedError") - before == 2
    assert ledger.by_caller()[Caller("judge", "1")].calls == 1


async def test_retries_stop_after_the_configured_number(
    llm_settings: LLMSettings, ledger: CostLedger
) -> None:
    provider = FakeProvider(
        model="fake:retry-exhausted",
        chat_script=failing_then_ok([TransientLLMError("503")] * 10),
    )
    client = LLMClient(provider, settings=llm_settings, ledger=ledger)

    with pytest.raises(TransientLLMError):
        await client.chat(HELLO)

    assert len(provider.calls) == llm_settings.max_retries + 1
    assert ledger.by_caller()[Caller()].failed_calls == 1


async def test_permanent_errors_are_not_retried(
    llm_settings: LLMSettings, ledger: CostLedger
) -> None:
    provider = FakeProvider(
        model="fake:permanent", chat_script=failing_then_ok([PermanentLLMError("400")])
    )
    client = LLMClient(provider, settings=llm_settings, ledger=ledger)

    with pytest.raises(PermanentLLMError):
        await client.chat(HELLO)

    assert len(provider.calls) == 1


class SlowOnceProvider(FakeProvider):
    """Hangs on its first chat call, answers at once after that."""

    async def chat(self, messages: Sequence[Message], **options: Any) -> ChatResult:
        first = not self.calls
        result = await super().chat(messages, **options)
        if first:
            await asyncio.sleep(10)
        return result


async def test_an_attempt_over_the_time_limit_is_retried_as_a_timeout(
    llm_settings: LLMSettings, ledger: CostLedger
) -> None:
    settings = llm_settings.model_copy(update={"timeout_s": 0.05})
    provider = SlowOnceProvider(model="fake:slow")
    client = LLMClient(provider, settings=settings, ledger=ledger)
    before = retries_seen("fake:slow", "LLMTimeoutError")

    result = await client.chat(HELLO)

    assert result.text == "OK"
    assert len(provider.calls) == 2
    assert retries_seen("fake:slow", "LLMTimeoutError") - before == 1


async def test_a_call_that_always_hangs_ends_in_llm_timeout_error(
    llm_settings: LLMSettings, ledger: CostLedger
) -> None:
    settings = llm_settings.model_copy(update={"timeout_s": 0.02, "max_retries": 1})

    class Hanging(FakeProvider):
        async def chat(self, messages: Sequence[Message], **options: Any) -> ChatResult:
            await super().chat(messages, **options)
            await asyncio.sleep(10)
            raise AssertionError("unreachable")

    provider = Hanging(model="fake:hang")
    with pytest.raises(LLMTimeoutError, match="REAG_LLM_TIMEOUT_S"):
        await LLMClient(provider, settings=settings, ledger=ledger).chat(HELLO)
    assert len(provider.calls) == 2


class CountingProvider(FakeProvider):
    """Records the most chat calls it ever had in flight at once."""

    in_flight: int = 0
    peak: int = 0

    async def chat(self, messages: Sequence[Message], **options: Any) -> ChatResult:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(0.01)
            return ChatResult("x", self.model, Usage(1, 1), 0.0)
        finally:
            self.in_flight -= 1


async def test_concurrency_limit_is_shared_by_clients_of_one_provider(
    llm_settings: LLMSettings, ledger: CostLedger
) -> None:
    provider = CountingProvider(model="fake:busy")
    limiter = ConcurrencyLimiter(2)
    judge = LLMClient(
        provider, Caller("judge", "1"), settings=llm_settings, ledger=ledger, limiter=limiter
    )
    oracle = judge.with_caller(Caller("oracle"))

    await asyncio.gather(*(c.chat(HELLO) for c in (judge, oracle) * 4))

    assert provider.peak == 2
    totals = ledger.by_caller()
    assert totals[Caller("judge", "1")].calls == 4
    assert totals[Caller("oracle")].calls == 4


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"Retry-After": "3"}, 3.0),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"Retry-After": "Thu, 03 Dec 2026 12:00:10 GMT"}, 10.0),
        ({"Retry-After": "Thu, 03 Dec 2026 11:59:00 GMT"}, 0.0),  # a date already past
        ({"Retry-After": "soon"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_retry_after_is_read_as_seconds_or_as_a_date(
    headers: dict[str, str] | None, seconds: float | None
) -> None:
    now = datetime(2026, 12, 3, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds(headers, now=now) == seconds


async def test_a_rate_limit_waits_as_long_as_its_retry_after_asks_up_to_the_longest_delay(
    llm_settings: LLMSettings, ledger: CostLedger, monkeypatch: pytest.MonkeyPatch
) -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    settings = llm_settings.model_copy(update={"backoff_initial_s": 0.01, "backoff_max_s": 5.0})
    provider = FakeProvider(
        model="fake:retry-after",
        chat_script=failing_then_ok(
            [RateLimitedError("429", retry_after_s=2.0), RateLimitedError("429", 60.0)]
        ),
    )
    client = LLMClient(provider, settings=settings, ledger=ledger)

    assert (await client.chat(HELLO)).text == "fine"
    # the backoff alone would wait ~0.01-0.04 s; the provider asked for 2 s, then 60 s (capped)
    assert slept[0] == pytest.approx(2.0, abs=0.05)
    assert slept[1] == 5.0


async def admitted_within(rate: RateLimit, tokens: int, seconds: float = 0.2) -> bool:
    try:
        await asyncio.wait_for(rate.admit(tokens), seconds)
    except TimeoutError:
        return False
    return True


async def test_each_replica_keeps_to_its_share_of_the_requests_per_minute() -> None:
    rate = RateLimit(requests_per_minute=6, tokens_per_minute=None, replicas=2)
    assert rate.requests_per_minute == 3
    assert [await admitted_within(rate, 10) for _ in range(3)] == [True, True, True]
    assert not await admitted_within(rate, 10)  # the fourth waits for the minute to turn


async def test_tokens_per_minute_count_each_requests_estimated_tokens() -> None:
    rate = RateLimit(requests_per_minute=None, tokens_per_minute=1000, replicas=1)
    assert await admitted_within(rate, 600)
    assert not await admitted_within(rate, 600)  # 1,200 > 1,000 this minute
    # one request larger than the whole minute waits for a full bucket, not forever
    fresh = RateLimit(requests_per_minute=None, tokens_per_minute=100)
    assert await admitted_within(fresh, 5000)


async def test_no_limit_set_admits_at_once() -> None:
    rate = RateLimit(None, None)
    assert not rate.limited
    assert all([await admitted_within(rate, 10**6) for _ in range(100)])


def test_a_requests_tokens_are_its_prompt_at_four_characters_a_token_plus_its_completion() -> None:
    assert estimated_tokens("x" * 400, 50) == 150
    assert estimated_tokens([Message("system", "x" * 8), Message("user", "y" * 5)], 0) == 4
    assert estimated_tokens(None, 7) == 7


async def test_every_try_of_a_call_counts_against_the_requests_per_minute(
    llm_settings: LLMSettings, ledger: CostLedger
) -> None:
    settings = llm_settings.model_copy(update={"requests_per_minute": 2.0})
    provider = FakeProvider(
        model="fake:rpm", chat_script=failing_then_ok([RateLimitedError("429")])
    )
    client = LLMClient(provider, settings=settings, ledger=ledger)
    assert (await client.chat(HELLO)).text == "fine"  # two requests: the 429 and the retry
    assert len(provider.calls) == 2
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(client.chat(HELLO), 0.2)  # a third must wait for the minute
    assert len(provider.calls) == 2
