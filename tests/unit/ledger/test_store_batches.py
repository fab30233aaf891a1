"""``LedgerStore.record_many``: one transaction gives every event the update its own
transaction would, rolls back whole, and concurrent batches never deadlock."""

from __future__ import annotations

import random
import threading

import pytest

from reag.ledger.store import EventWithoutCaseError, LedgerEvent, LedgerStore, LedgerUpdate
from reag.v1 import events_pb2 as pb

from .conftest import NO, YES, Events


def history(n_cases: int, seed: int) -> list[LedgerEvent]:
    """Several cases' events interleaved, every event twice (redeliveries), reviews too."""
    rng = random.Random(seed)
    events: list[LedgerEvent] = []
    for number in range(n_cases):
        ev = Events(case_id=f"batch-{number:02d}", n=3)
        events += [ev.oracle(), ev.verdict(0, YES), ev.verdict(1, NO, tier=2), ev.abstain(2)]
        events.append(ev.review(2, YES))
    events *= 2
    rng.shuffle(events)
    return events


def shape(update: LedgerUpdate) -> tuple[bytes, bool, bool, bool, int]:
    result = pb.Result()
    result.CopyFrom(update.result)
    result.meta.ClearField("created_at")
    return (
        result.SerializeToString(deterministic=True),
        update.changed,
        update.duplicate,
        update.publish,
        len(update.agreements),
    )


def test_a_batch_gives_each_event_the_update_its_own_transaction_would(
    store: LedgerStore, sqlite_dsn: str
) -> None:
    events = history(n_cases=6, seed=1)
    alone = LedgerStore.open(sqlite_dsn.replace("ledger.db", "alone.db"))
    one_by_one = [alone.record(event) for event in events]
    batched: list[LedgerUpdate] = []
    for start in range(0, len(events), 7):  # uneven batches, cases split across them
        batched += store.record_many(events[start : start + 7])
    assert [shape(u) for u in batched] == [shape(u) for u in one_by_one]
    assert {r.meta.case_id for r in store.list_results()} == {f"batch-{n:02d}" for n in range(6)}
    alone.close()


def test_a_failed_batch_writes_none_of_its_events(store: LedgerStore) -> None:
    good = Events(case_id="kept-out")
    bad = Events(case_id="")
    with pytest.raises(EventWithoutCaseError):
        store.record_many([good.oracle(), good.verdict(0, YES), bad.verdict(0, YES)])
    assert store.get_result("kept-out") is None
    assert store.record_many([good.oracle()])[0].changed  # nothing of it was kept


@pytest.mark.postgres
def test_concurrent_batches_over_the_same_cases_never_deadlock(
    postgres_store: LedgerStore,
) -> None:
    """Two stores (two replicas) x 4 threads write batches that share cases, each in
    another order: sorted by case id inside a transaction, none waits on another in a
    circle, and every case ends complete with its criteria once."""
    second = LedgerStore(postgres_store._engine)
    events = history(n_cases=12, seed=2)
    errors: list[BaseException] = []
    workers = 8
    start = threading.Barrier(workers)

    def write(worker: int) -> None:
        target = (postgres_store, second)[worker % 2]
        mine = list(events)
        random.Random(worker).shuffle(mine)
        start.wait()
        try:
            for at in range(0, len(mine), 10):
                target.record_many(mine[at : at + 10])
        except BaseException as exc:  # noqa: BLE001 - a thread must report every failure
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors, errors[:3]
    results = postgres_store.list_results()
    assert len(results) == 12
    assert all(r.complete and len(r.criteria) == 3 for r in results)
