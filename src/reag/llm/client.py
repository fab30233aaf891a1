"""``LLMClient``: the object every stage holds to call a model.

It wraps one ``Provider`` and adds what every call needs regardless of vendor:
pricing and accounting per caller (service, tier), retries with backoff on
transient errors, a time limit per attempt, a per-provider concurrency limit,
a spend budget, and structured output with one bounded repair attempt.

Get one from ``reag.llm.registry.make_client``; construct it directly only in
tests (with a ``FakeProvider``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from reag.llm.accounting import Caller, CostLedger, charged_app, default_ledger
from reag.llm.base import (
    BatchLabelProvider,
    BudgetExceededError,
    ChatResult,
    ContinuationScore,
    LabelProbs,
    LLMError,
    LLMTimeoutError,
    Message,
    Provider,
    StructuredOutputError,
    Usage,
)
from reag.llm.prices import PriceTable
from reag.llm.reliability import ConcurrencyLimiter, RateLimit, estimated_tokens, retrying
from reag.llm.settings import LLMSettings
from reag.llm.tracing import Prompt, llm_span
from reag.metrics import LLM_BUDGET_REMAINING, LLM_LATENCY, LLM_RETRIES

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")
Priced = TypeVar("Priced", ChatResult, LabelProbs, ContinuationScore)

__all__ = ["Caller", "LLMClient", "StructuredResult"]


@dataclass(frozen=True, slots=True)
class StructuredResult(Generic[T]):
    value: T
    raw: str
    repaired: bool
    usage: Usage
    cost_usd: float
    latency_s: float
    n_calls: int


@functools.cache
def _schema_json(schema: type[BaseModel]) -> str:
    # pydantic rebuilds a model's JSON schema on every call: 8 % of the retriever's event
    # loop under load, for a value that never changes. Kept as text so that no caller can
    # change what the next one gets.
    return json.dumps(schema.model_json_schema())


def json_schema_of(schema: type[BaseModel]) -> dict[str, Any]:
    """``schema.model_json_schema()``, built once per model class."""
    loaded: dict[str, Any] = json.loads(_schema_json(schema))
    return loaded


def parse_json_as(schema: type[T], text: str) -> T:
    """``text`` as ``schema``, tolerating raw control characters inside JSON strings.

    Grammar-constrained local decoding can emit a literal newline inside a
    string, which strict JSON forbids; the content is still what the model
    meant, so it is read leniently and then validated in JSON mode as usual.
    Raises ``ValueError`` for text that is not JSON at all, ``ValidationError``
    for JSON that does not fit the schema.
    """
    try:
        data = json.loads(text, strict=False)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from exc
    return schema.model_validate_json(json.dumps(data))


class LLMClient:
    """Accounting, reliability and structured output around one provider.

    Clients made by the registry for the same provider share its concurrency
    limit, and all clients of a process share one ``CostLedger`` (so the
    budget is the process's). ``n_calls`` and ``cost_usd`` on every result
    count every call made for it.
    """

    def __init__(
        self,
        provider: Provider,
        caller: Caller | None = None,
        *,
        settings: LLMSettings | None = None,
        prices: PriceTable | None = None,
        ledger: CostLedger | None = None,
        limiter: ConcurrencyLimiter | None = None,
        rate: RateLimit | None = None,
    ) -> None:
        self.provider = provider
        self.caller = caller or Caller()
        self.settings = settings or LLMSettings()
        self.prices = prices or PriceTable.load(self.settings.prices_file)
        self.price = self.prices.lookup(provider.model)  # an unpriced model fails here, early
        self.ledger = ledger or default_ledger()
        self.limiter = limiter or ConcurrencyLimiter(self.settings.concurrency)
        self.rate = rate or rate_limit_for(self.settings)

    @property
    def model(self) -> str:
        return self.provider.model

    def with_caller(self, caller: Caller) -> LLMClient:
        """The same provider, ledger and limit, charged to another caller."""
        return LLMClient(
            self.provider,
            caller,
            settings=self.settings,
            prices=self.prices,
            ledger=self.ledger,
            limiter=self.limiter,
            rate=self.rate,
        )

    # --- the machinery every call goes through ---------------------------------
    async def _check_budget(self, kind: str) -> None:
        """Refuses the call once the budget is spent: the process's, or the app's this hour.

        With a shared budget (``CostLedger.share_budget``) the spend is read from
        it, so every replica and a restarted process see the same figure.
        """
        budget = self.settings.budget_usd
        if budget is None:
            return
        shared = self.ledger.shared_budget
        if shared is not None:
            app = charged_app()
            spent = await asyncio.to_thread(shared.spent, app)
            whose = f"app {app or '(none)'} this hour, every replica together,"
        else:
            spent = self.ledger.total_usd()
            whose = "this process"
        LLM_BUDGET_REMAINING.labels(self.caller.service).set(max(budget - spent, 0.0))
        free = self.price.input == self.price.cached_input == self.price.output == 0
        if spent > budget or (spent >= budget and not free):
            self.ledger.record_failure(self.caller, self.model, kind, "refused_budget")
            raise BudgetExceededError(
                f"LLM spend of {whose} is {spent:.6f} USD, at or over the budget of "
                f"{budget} USD (REAG_LLM_BUDGET_USD); {self.model} was not called. Raise the "
                "budget or unset it to continue."
            )

    async def _charge(self, cost_usd: float) -> None:
        """Adds a settled call's cost to the shared budget, if there is one and it cost."""
        shared = self.ledger.shared_budget
        if shared is not None and cost_usd > 0:
            await asyncio.to_thread(shared.charge, charged_app(), cost_usd)

    def _on_retry(self, error: BaseException) -> None:
        LLM_RETRIES.labels(self.model, type(error).__name__).inc()

    async def _run(
        self,
        kind: str,
        call: Callable[[], Awaitable[R]],
        *,
        attempts_scale: int = 1,
        prompt: Prompt | None = None,
        request: dict[str, Any] | None = None,
    ) -> tuple[R, float]:
        """Budget, concurrency slot, then attempts with a time limit and retries.

        Once a slot is held, the call and its retries run in one GenAI span
        (``reag.llm.tracing``); ``prompt`` is recorded there only when
        ``REAG_LLM_TRACE_CONTENT`` is set.
        """
        await self._check_budget(kind)
        s = self.settings
        local = self.model.startswith("local:")
        limit_s = (s.local_timeout_s if local else s.timeout_s) * attempts_scale
        setting = "REAG_LLM_LOCAL_TIMEOUT_S" if local else "REAG_LLM_TIMEOUT_S"
        tokens = estimated_tokens(prompt, int((request or {}).get("max_tokens") or 0))
        started = time.perf_counter()
        try:
            async with self.limiter.slot():
                with llm_span(
                    self.model,
                    kind,
                    self.caller,
                    prompt=prompt,
                    content=s.trace_content,
                    request=request,
                ) as span:

                    def on_retry(error: BaseException) -> None:
                        self._on_retry(error)
                        span.retried(error)

                    async for attempt in retrying(
                        max_retries=s.max_retries,
                        initial_s=s.backoff_initial_s,
                        max_s=s.backoff_max_s,
                        on_retry=on_retry,
                    ):
                        with attempt:
                            await self.rate.admit(tokens)  # every try is a request
                            try:
                                async with asyncio.timeout(limit_s):
                                    result = await call()
                            except TimeoutError as exc:
                                raise LLMTimeoutError(
                                    f"{self.model} gave no answer within {limit_s:g} s ({setting})"
                                ) from exc
                    span.finished(result, self.price.cost)
        except LLMError:
            self.ledger.record_failure(self.caller, self.model, kind, "error")
            raise
        return result, time.perf_counter() - started

    def _account(self, kind: str, result: Priced, latency_s: float) -> Priced:
        n_calls = getattr(result, "n_calls", 1)
        cost = self.price.cost(result.usage)
        self.ledger.record(
            self.caller,
            self.model,
            kind,
            usage=result.usage,
            cost_usd=cost,
            latency_s=latency_s,
            n_calls=n_calls,
        )
        LLM_LATENCY.labels(self.model, self.caller.service, self.caller.tier, kind).observe(
            latency_s
        )
        return dataclasses.replace(result, cost_usd=cost, latency_s=latency_s)

    # --- capabilities ---------------------------------------------------------------
    async def _chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float,
        max_tokens: int,
        seed: int | None,
        stop: Sequence[str] | None,
        json_schema: dict[str, Any] | None,
    ) -> ChatResult:
        result, latency = await self._run(
            "chat",
            lambda: self.provider.chat(
                messages,
                temperature=temperature,
                max_tokens=max_tokens,
                json_schema=json_schema,
                seed=seed,
                stop=stop,
            ),
            prompt=messages,
            request={"temperature": temperature, "max_tokens": max_tokens, "seed": seed},
        )
        priced = self._account("chat", result, latency)
        await self._charge(priced.cost_usd)
        return priced

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int = 512,
        seed: int | None = None,
        stop: Sequence[str] | None = None,
    ) -> ChatResult:
        return await self._chat(
            messages,
            temperature=temperature,
            max_tokens=max_tokens,
            seed=seed,
            stop=stop,
            json_schema=None,
        )

    async def structured(
        self,
        messages: Sequence[Message],
        schema: type[T],
        *,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        seed: int | None = None,
    ) -> StructuredResult[T]:
        """Chat constrained to ``schema``'s JSON schema, parsed into ``schema``.

        Broken JSON gets exactly one repair attempt (the model is shown its
        output and the parse error); after that ``StructuredOutputError`` with
        the raw text. Both attempts are priced and counted.
        """
        json_schema = json_schema_of(schema)
        first = await self._chat(
            messages,
            temperature=temperature,
            max_tokens=max_tokens,
            seed=seed,
            stop=None,
            json_schema=json_schema,
        )
        try:
            value = parse_json_as(schema, first.text)
            return StructuredResult(
                value, first.text, False, first.usage, first.cost_usd, first.latency_s, 1
            )
        except (ValidationError, ValueError) as exc:
            error = str(exc)
        repair = [
            *messages,
            Message("assistant", first.text),
            Message(
                "user",
                "That output is not valid JSON for the required schema. Error:\n"
                f"{error}\nReply with only the corrected JSON object, matching this schema:\n"
                f"{json.dumps(json_schema)}",
            ),
        ]
        second = await self._chat(
            repair,
            temperature=0.0,
            max_tokens=max_tokens,
            seed=seed,
            stop=None,
            json_schema=json_schema,
        )
        usage = first.usage + second.usage
        try:
            value = parse_json_as(schema, second.text)
        except (ValidationError, ValueError) as exc:
            detail = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
            raise StructuredOutputError(
                f"{self.model} returned output that does not match {schema.__name__} "
                f"after one repair attempt: {detail}",
                raw=second.text,
            ) from exc
        return StructuredResult(
            value,
            second.text,
            True,
            usage,
            first.cost_usd + second.cost_usd,
            first.latency_s + second.latency_s,
            2,
        )

    async def label_probs(
        self,
        prompt: str | Sequence[Message],
        labels: Sequence[str],
        *,
        n_samples: int | None = None,
    ) -> LabelProbs:
        """``n_samples`` (default: settings' ``sampling_n``) matters only where sampling is used."""
        n = n_samples or self.settings.sampling_n
        result, latency = await self._run(
            "label_probs",
            lambda: self.provider.label_probs(prompt, labels, n_samples=n),
            prompt=prompt,
        )
        priced = self._account("label_probs", result, latency)
        await self._charge(priced.cost_usd)
        return priced

    async def label_probs_many(
        self,
        prompts: Sequence[str | Sequence[Message]],
        labels: Sequence[str],
        *,
        n_samples: int | None = None,
    ) -> list[LabelProbs]:
        """One result per prompt, in order.

        A provider that takes the group as one request (the local model, the
        model server) gets it whole, so the prompts' shared prefix is evaluated
        once; other providers get the prompts concurrently, within the limit.
        """
        if not prompts:
            return []
        n = n_samples or self.settings.sampling_n
        if not isinstance(self.provider, BatchLabelProvider):
            return list(
                await asyncio.gather(*(self.label_probs(p, labels, n_samples=n) for p in prompts))
            )
        provider = self.provider
        results, _ = await self._run(
            "label_probs",
            lambda: provider.label_probs_many(prompts, labels, n_samples=n),
            attempts_scale=len(prompts),
            prompt=prompts[0],  # the group shares its prefix; the first stands for it
        )
        priced = [self._account("label_probs", r, r.latency_s) for r in results]
        await self._charge(sum(r.cost_usd for r in priced))
        return priced

    async def score_continuation(self, context: str, target: str) -> ContinuationScore:
        """Mean log p(target | context), exact; ``CapabilityError`` where a provider cannot."""
        result, latency = await self._run(
            "score",
            lambda: self.provider.score_continuation(context, target),
            prompt=context + target,
        )
        priced = self._account("score", result, latency)
        await self._charge(priced.cost_usd)
        return priced

    async def aclose(self) -> None:
        await self.provider.aclose()


def rate_limit_for(settings: LLMSettings) -> RateLimit:
    """This process's share of the provider's requests and tokens per minute."""
    return RateLimit(
        settings.requests_per_minute, settings.tokens_per_minute, replicas=settings.replicas
    )
