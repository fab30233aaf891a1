"""The summary is added up in SQL, and PostgreSQL writers need no lock of the process.

On SQLite and PostgreSQL: ``LedgerStore.summary`` gives the same figures as
``summarize`` over every result, without loading one; a database written before
the counts were kept gets them on open. On PostgreSQL: many writers in two
stores at once (two ledger processes) lose and double nothing.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable

import pytest
from sqlalchemy import delete, func, select

from reag.ledger.store import LedgerStore
from reag.ledger.summary import result_figures, summarize
from reag.ledger.tables import (
    LedgerCaseCountsRow,
    LedgerCaseRow,
    LedgerCriterionRow,
    LedgerTierCountsRow,
)
from reag.v1 import api_pb2
from reag.v1 import events_pb2 as pb

from .conftest import NO, YES, Events

SCOPES: list[dict[str, str]] = [{}, {"app": "a"}, {"run_id": "r2"}, {"app": "b", "run_id": "r1"}]


def random_history(store: LedgerStore, rng: random.Random, n_cases: int) -> None:
    """Cases of two apps and two runs: verdicts at every tier, abstains, reviews, open ones."""
    for number in range(n_cases):
        ev = Events(
            case_id=f"case-{number}",
            app=rng.choice("ab"),
            run_id=rng.choice(("r1", "r2")),
            n=rng.randint(1, 4),
        )
        if rng.random() < 0.9:
            store.record_oracle(ev.oracle())
        for index in range(ev.n):
            roll = rng.random()
            if roll < 0.6:
                store.record_verdict(ev.verdict(index, rng.choice((YES, NO)), rng.randint(1, 3)))
            elif roll < 0.85:
                store.record_abstain(ev.abstain(index))
                if rng.random() < 0.5:
                    store.record_review(ev.review(index, rng.choice((YES, NO))))
            # else: the criterion is still open


def assert_same(got: api_pb2.Summary, want: api_pb2.Summary) -> None:
    assert (got.cases, got.passed, got.failed, got.abstained) == (
        want.cases,
        want.passed,
        want.failed,
        want.abstained,
    )
    assert (got.criteria, got.criteria_accepted) == (want.criteria, want.criteria_accepted)
    assert got.total_cost_usd == pytest.approx(want.total_cost_usd, rel=1e-9, abs=1e-12)
    assert got.coverage == pytest.approx(want.coverage)
    assert [t.tier for t in got.tiers] == [t.tier for t in want.tiers]
    for mine, theirs in zip(got.tiers, want.tiers, strict=True):
        assert (mine.requests, mine.accepted, mine.escalated, mine.abstained) == (
            theirs.requests,
            theirs.accepted,
            theirs.escalated,
            theirs.abstained,
        )
        assert mine.cost_usd == pytest.approx(theirs.cost_usd, rel=1e-9, abs=1e-12)


def expected(store: LedgerStore) -> Callable[..., api_pb2.Summary]:
    def of(**scope: str) -> api_pb2.Summary:
        return summarize(store.list_results(**scope))  # type: ignore[arg-type]

    return of


def test_the_summary_in_sql_matches_the_results_it_adds_up(
    store: LedgerStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    random_history(store, random.Random(12), n_cases=30)
    want = {str(scope): expected(store)(**scope) for scope in SCOPES}
    assert want[str({})].cases > 20
    assert len(want[str({})].tiers) == 3

    def no_loading(*_args: object, **_kwargs: object) -> list[pb.Result]:
        raise AssertionError("summary loaded the results")

    monkeypatch.setattr(store, "list_results", no_loading)
    for scope in SCOPES:
        assert_same(store.summary(**scope), want[str(scope)])
    empty = store.summary(app="nobody")
    assert (empty.cases, empty.criteria, len(empty.tiers), empty.total_cost_usd) == (0, 0, 0, 0.0)


def test_results_stored_before_the_counts_existed_get_them_on_open(store: LedgerStore) -> None:
    random_history(store, random.Random(3), n_cases=10)
    want = expected(store)()
    engine = store._engine
    with engine.begin() as conn:
        conn.execute(delete(LedgerTierCountsRow))
        conn.execute(delete(LedgerCaseCountsRow))
    assert store.summary().criteria == 0  # the counts are gone, as in an older database
    assert_same(LedgerStore(engine).summary(), want)


@pytest.mark.postgres
def test_postgres_writers_share_no_lock_and_lose_or_double_nothing(
    postgres_store: LedgerStore,
) -> None:
    """Two stores (two ledger processes) x 6 threads, every event delivered twice, in a
    shuffled order: each case ends with its criteria once and a complete result."""
    assert not isinstance(postgres_store._write_lock, type(threading.Lock()))
    second = LedgerStore(postgres_store._engine)
    n_cases, n_criteria = 16, 4
    events: list[pb.Oracle | pb.Verdict | pb.Abstain] = []
    for number in range(n_cases):
        ev = Events(case_id=f"pg-{number}", n=n_criteria)
        events.append(ev.oracle())
        events += [ev.verdict(i, YES, tier=1 + i % 3) for i in range(n_criteria - 1)]
        events.append(ev.abstain(n_criteria - 1))
    deliveries = events * 2
    random.Random(5).shuffle(deliveries)
    errors: list[BaseException] = []
    workers = 12
    start = threading.Barrier(workers)

    def write(worker: int) -> None:
        target = (postgres_store, second)[worker % 2]
        start.wait()
        try:
            for event in deliveries[worker::workers]:
                if isinstance(event, pb.Oracle):
                    target.record_oracle(event)
                elif isinstance(event, pb.Verdict):
                    target.record_verdict(event)
                else:
                    target.record_abstain(event)
        except BaseException as exc:  # noqa: BLE001 - a thread must report every failure
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors, errors[:3]
    with postgres_store._engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(LedgerCaseRow)).scalar() == n_cases
        per_case = conn.execute(
            select(LedgerCriterionRow.case_id, func.count()).group_by(LedgerCriterionRow.case_id)
        ).all()
        assert sorted(n for _, n in per_case) == [n_criteria] * n_cases
        tier_rows = conn.execute(select(func.count()).select_from(LedgerTierCountsRow)).scalar()
    results = postgres_store.list_results()
    assert len(results) == n_cases
    assert tier_rows == sum(len(result_figures(r).tiers) for r in results)
    assert all(r.complete and len(r.criteria) == n_criteria for r in results)
    assert_same(postgres_store.summary(), summarize(results))
