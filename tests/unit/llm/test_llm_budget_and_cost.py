"""Every call is priced, charged to its caller, exported, and stopped by the budget."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from reag.llm.accounting import Caller, CostLedger
from reag.llm.base import BudgetExceededError, Message, Usage
from reag.llm.client import LLMClient
from reag.llm.prices import PriceTable
from reag.llm.scripted import FakeProvider
from reag.llm.settings import LLMSettings

PRICED = "openai:gpt-4.1-mini"
PROMPT = [Message("user", "word " * 1000)]  # the fake counts 1000 prompt tokens


def sample(name: str, labels: dict[str, str]) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_result_cost_is_the_price_table_applied_to_its_tokens(
    llm_settings: LLMSettings, ledger: CostLedger
) -> None:
    client = LLMClient(
        FakeProvider(model=PRICED), Caller("oracle"), settings=llm_settings, ledger=ledger
    )
    price = PriceTable.load().lookup(PRICED)

    result = await client.chat(PROMPT)

    assert result.usage == Usage(1000, 1)
    assert result.cost_usd == pytest.approx((1000 * price.input + 1 * price.output) / 1e6)
    assert ledger.total_usd() == pytest.approx(result.cost_usd)


async def test_costs_add_up_per_caller_and_reach_the_metrics(
    llm_settings: LLMSettings, ledger: CostLedger
) -> None:
    judge = LLMClient(
        FakeProvider(model=PRICED), Caller("judge", "2"), settings=llm_settings, ledger=ledger
    )
    labels = {"model": PRICED, "service": "judge", "tier": "2"}
    cost_before = sample("reag_llm_cost_usd_total", labels)
    prompt_before = sample("reag_llm_tokens_total", {**labels, "type": "prompt"})

    first = await judge.chat(PROMPT)
    second = await judge.chat(PROMPT)
    await judge.with_caller(Caller("retriever")).chat(PROMPT)

    totals = ledger.by_caller()
    assert totals[Caller("judge", "2")].cost_usd == pytest.approx(first.cost_usd * 2)
    assert totals[Caller("judge", "2")].usage.prompt_tokens == 2000
    assert totals[Caller("retriever")].calls == 1
    assert sample("reag_llm_cost_usd_total", labels) - cost_before == pytest.approx(
        first.cost_usd + second.cost_usd
    )
    assert sample("reag_llm_tokens_total", {**labels, "type": "prompt"}) - prompt_before == 2000


async def test_budget_refuses_calls_once_spent_and_never_calls_the_provider(
    llm_settings: LLMSettings, ledger: CostLedger
) -> None:
    price = PriceTable.load().lookup(PRICED)
    per_call = (1000 * price.input + 1 * price.output) / 1e6
    settings = llm_settings.model_copy(update={"budget_usd": per_call * 2.5})
    provider = FakeProvider(model=PRICED)
    client = LLMClient(provider, Caller("judge", "3"), settings=settings, ledger=ledger)
    refused = {
        "model": PRICED,
        "service": "judge",
        "tier": "3",
        "kind": "chat",
        "outcome": "refused_budget",
    }
    refused_before = sample("reag_llm_calls_total", refused)

    for _ in range(3):  # 3 calls: the third starts with 2 calls' spend, under budget
        await client.chat(PROMPT)
    with pytest.raises(BudgetExceededError, match="REAG_LLM_BUDGET_USD"):
        await client.chat(PROMPT)

    assert len(provider.calls) == 3
    assert sample("reag_llm_calls_total", refused) - refused_before == 1
    assert sample("reag_llm_budget_remaining_usd", {"service": "judge"}) == 0.0


async def test_budget_does_not_stop_a_free_model_at_zero_spend(
    llm_settings: LLMSettings, ledger: CostLedger
) -> None:
    settings = llm_settings.model_copy(update={"budget_usd": 0.0})
    client = LLMClient(FakeProvider(model="local:gemma-3-270m"), settings=settings, ledger=ledger)
    assert (await client.chat(PROMPT)).cost_usd == 0.0


async def test_budget_counts_the_whole_ledger_not_one_client(
    llm_settings: LLMSettings, ledger: CostLedger
) -> None:
    settings = llm_settings.model_copy(update={"budget_usd": 1e-9})
    spender = LLMClient(
        FakeProvider(model=PRICED), Caller("oracle"), settings=settings, ledger=ledger
    )
    await spender.chat(PROMPT)
    other = LLMClient(
        FakeProvider(model=PRICED), Caller("judge", "1"), settings=settings, ledger=ledger
    )
    with pytest.raises(BudgetExceededError):
        await other.chat(PROMPT)
