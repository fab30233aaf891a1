"""The LLM budget per app and hour lives in the store: replicas share it, a restart keeps it."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from reag.llm.accounting import CostLedger, charged_to, default_ledger
from reag.llm.base import BudgetExceededError, Message
from reag.llm.client import Caller, LLMClient
from reag.llm.prices import PriceTable
from reag.llm.scripted import FakeProvider
from reag.llm.settings import LLMSettings
from reag.traffic.spend import HourlyBudget, hour_of
from services.kit.spend import SpendFlusher

POSTGRES_DSN = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
PRICED = "openai:gpt-4.1-mini"
PROMPT = [Message("user", "word " * 1000)]  # the fake counts 1000 prompt tokens
NOON = datetime(2026, 1, 2, 12, 30, tzinfo=UTC)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def dsn(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'budget.db'}" if request.param == "sqlite" else POSTGRES_DSN


@pytest.fixture
def app() -> str:
    """An app name of this test alone: the PostgreSQL database is shared."""
    return f"app-{uuid.uuid4().hex[:12]}"


def per_call() -> float:
    price = PriceTable.load().lookup(PRICED)
    return (1000 * price.input + 1 * price.output) / 1e6


def replica(dsn: str, budget_usd: float) -> tuple[LLMClient, FakeProvider]:
    """One process: its own ledger and client, the budget in the store at ``dsn``."""
    ledger = CostLedger()
    ledger.share_budget(HourlyBudget(dsn))
    provider = FakeProvider(model=PRICED)
    settings = LLMSettings(_env_file=None, budget_usd=budget_usd, max_retries=0)
    return LLMClient(provider, Caller("oracle"), settings=settings, ledger=ledger), provider


async def test_two_replicas_share_one_budget_and_a_restart_keeps_it(dsn: str, app: str) -> None:
    budget = per_call() * 2.5  # room for three calls: the third starts under budget
    first, first_calls = replica(dsn, budget)
    second, second_calls = replica(dsn, budget)
    with charged_to(app):
        await first.chat(PROMPT)
        await second.chat(PROMPT)
        await first.chat(PROMPT)
        with pytest.raises(BudgetExceededError, match="every replica"):
            await second.chat(PROMPT)
        restarted, restarted_calls = replica(dsn, budget)
        with pytest.raises(BudgetExceededError):
            await restarted.chat(PROMPT)
    assert (len(first_calls.calls), len(second_calls.calls), len(restarted_calls.calls)) == (
        2,
        1,
        0,
    )
    assert HourlyBudget(dsn).spent(app) == pytest.approx(per_call() * 3)


async def test_the_budget_is_per_app(dsn: str, app: str) -> None:
    client, _ = replica(dsn, per_call() / 2)
    with charged_to(app):
        await client.chat(PROMPT)
        with pytest.raises(BudgetExceededError):
            await client.chat(PROMPT)
    with charged_to(f"{app}-other"):
        await client.chat(PROMPT)


def test_concurrent_charges_from_two_replicas_lose_nothing(dsn: str, app: str) -> None:
    replicas = [HourlyBudget(dsn, clock=lambda: NOON) for _ in range(2)]

    def spend(budget: HourlyBudget) -> None:
        for _ in range(25):
            budget.charge(app, 0.25)

    threads = [threading.Thread(target=spend, args=(b,)) for b in replicas for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert replicas[0].spent(app) == replicas[1].spent(app) == 2 * 3 * 25 * 0.25


def test_each_hour_starts_from_nothing(dsn: str, app: str) -> None:
    now = [NOON]
    budget = HourlyBudget(dsn, clock=lambda: now[0])
    assert budget.charge(app, 1.0) == 1.0
    assert budget.charge(app, 0.5) == 1.5
    now[0] = NOON + timedelta(minutes=30)  # 13:00, the next hour
    assert budget.spent(app) == 0.0
    assert hour_of(now[0]) == "2026-01-02T13"


def test_a_store_fault_while_charging_keeps_the_amount_for_the_next_charge(
    tmp_path: Path, app: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    budget = HourlyBudget(f"sqlite:///{tmp_path / 'b.db'}", clock=lambda: NOON)
    real_add = budget._add

    def down(*_args: object) -> float:
        raise OperationalError("INSERT", {}, Exception("the store is down"))

    monkeypatch.setattr(budget, "_add", down)
    assert budget.charge(app, 2.0) == 2.0  # made and paid: not an error for its caller
    budget.charge(f"{app}-other", 0.5)
    assert budget.spent(app) == 2.0  # still counted here
    monkeypatch.setattr(budget, "_add", real_add)
    assert budget.charge(app, 1.0) == 3.0
    restarted = HourlyBudget(f"sqlite:///{tmp_path / 'b.db'}", clock=lambda: NOON)
    assert restarted.spent(app) == 3.0
    assert restarted.spent(f"{app}-other") == 0.5  # saved with the next charge of any app


@pytest.fixture
def process_ledger() -> Iterator[CostLedger]:
    ledger = default_ledger()
    before = ledger.share_budget(None)
    yield ledger
    ledger.share_budget(before)


async def test_a_service_holds_its_budget_in_the_store_while_it_runs(
    tmp_path: Path, process_ledger: CostLedger
) -> None:
    flusher = SpendFlusher("oracle", f"sqlite:///{tmp_path / 's.db'}", every_s=3600)
    await flusher.start()
    assert isinstance(process_ledger.shared_budget, HourlyBudget)
    await flusher.stop()
    assert process_ledger.shared_budget is None
