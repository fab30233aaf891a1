"""Cases that started and never finished: the store's query and count (SQLite and
PostgreSQL), the ``reag_cases_stuck`` gauge the ledger keeps, and ``reag results --stuck``."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import typer
from prometheus_client import REGISTRY
from sqlalchemy import text
from typer.testing import CliRunner

from reag.ledger.store import LedgerStore
from reag.ledger.stuck import StuckGauge, StuckSettings
from reag.storage import make_engine
from services.ledger.stuck import StuckWatch
from shell.cli import results as results_cli

from .conftest import NO, POSTGRES_DSN, YES, Events

LATER = timedelta(seconds=120)


def fill(store: LedgerStore, app: str = "nutrition") -> dict[str, Events]:
    """done: complete; half: oracle and 1 of 2 verdicts; none: oracle only; orphan: a
    verdict whose oracle never came (not started, as far as the ledger knows)."""
    cases = {
        name: Events(f"{app}-{name}-{uuid.uuid4().hex[:6]}", app=app, n=2)
        for name in ("done", "half", "none", "orphan")
    }
    store.record_oracle(cases["done"].oracle())
    store.record_verdict(cases["done"].verdict(0, YES))
    store.record_verdict(cases["done"].verdict(1, NO))
    store.record_oracle(cases["half"].oracle())
    store.record_verdict(cases["half"].verdict(0, YES))
    store.record_oracle(cases["none"].oracle())
    store.record_verdict(cases["orphan"].verdict(0, YES))
    return cases


def test_started_unfinished_cases_past_the_window_are_stuck(store: LedgerStore) -> None:
    cases = fill(store)
    fill(store, app="other")
    now = datetime.now(UTC)
    assert store.stuck_cases(60, now=now) == []  # nothing is older than the window yet
    stuck = store.stuck_cases(60, app="nutrition", now=now + LATER)
    assert {c.case_id for c in stuck} == {cases["half"].case_id, cases["none"].case_id}
    decided = {c.case_id: (c.decided, c.n_criteria) for c in stuck}
    assert decided[cases["half"].case_id] == (1, 2)
    assert decided[cases["none"].case_id] == (0, 2)
    assert all(c.first_seen.tzinfo is not None and c.first_seen <= now for c in stuck)
    assert store.stuck_counts(60, now=now + LATER) == {"nutrition": 2, "other": 2}
    assert store.stuck_counts(60, now=now) == {"nutrition": 0, "other": 0}


def test_a_stuck_case_that_completes_is_no_longer_stuck(store: LedgerStore) -> None:
    cases = fill(store)
    store.record_verdict(cases["half"].verdict(1, YES))
    store.record_abstain(cases["none"].abstain(0))
    store.record_abstain(cases["none"].abstain(1))
    assert store.stuck_counts(60, now=datetime.now(UTC) + LATER) == {"nutrition": 0}


def gauge(app: str) -> float | None:
    return REGISTRY.get_sample_value("reag_cases_stuck", {"app": app})


def test_the_gauge_goes_back_to_zero_when_an_app_has_none() -> None:
    keeper = StuckGauge()
    keeper.set({"gauge-a": 3, "gauge-b": 1})
    assert (gauge("gauge-a"), gauge("gauge-b")) == (3, 1)
    keeper.set({"gauge-b": 2})
    assert (gauge("gauge-a"), gauge("gauge-b")) == (0, 2)


async def test_the_ledger_counts_stuck_cases_into_the_gauge(store: LedgerStore) -> None:
    app = f"watched-{uuid.uuid4().hex[:6]}"
    fill(store, app=app)
    watch = StuckWatch(store, StuckSettings(ledger_stuck_after_s=1e-6))
    counts = await watch.count()
    assert counts[app] == 2
    assert gauge(app) == 2


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def cli_dsn(request: pytest.FixtureRequest, sqlite_dsn: str) -> Iterator[str]:
    """A DSN the command opens itself: SQLite, or a PostgreSQL schema of its own."""
    if request.param == "sqlite":
        yield sqlite_dsn
        return
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = make_engine(POSTGRES_DSN)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield f"{POSTGRES_DSN}?options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def test_reag_results_stuck_lists_them_and_fails(cli_dsn: str) -> None:
    store = LedgerStore.open(cli_dsn)
    cases = fill(store)
    app = typer.Typer()
    results_cli.register(app)
    runner = CliRunner()

    out = runner.invoke(app, ["results", "--stuck", "--store", cli_dsn, "--window", "3600"])
    assert out.exit_code == 0, out.output
    assert "no stuck cases" in out.output

    out = runner.invoke(app, ["results", "--stuck", "--store", cli_dsn, "--window", "0"])
    assert out.exit_code == 1, out.output
    assert cases["half"].case_id in out.output
    assert "1/2" in out.output
    assert cases["none"].case_id in out.output
    assert "0/2" in out.output
    assert cases["done"].case_id not in out.output
    assert cases["orphan"].case_id not in out.output
    assert "2 case(s)" in out.output

    out = runner.invoke(app, ["results", "--stuck", "--json", "--store", cli_dsn, "--window", "0"])
    rows = json.loads(out.stdout)
    assert {r["case_id"] for r in rows} == {cases["half"].case_id, cases["none"].case_id}
    store.close()
