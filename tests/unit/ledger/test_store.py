"""The store on SQLite and PostgreSQL: idempotent upserts, any arrival order, publishing."""

from __future__ import annotations

import itertools
import random
import threading

import pytest
from google.protobuf.json_format import MessageToJson
from prometheus_client import REGISTRY

from reag.ledger.outcome import is_reviewed
from reag.ledger.store import EventWithoutCaseError, LedgerStore, LedgerUpdate
from reag.v1 import events_pb2 as pb

from .conftest import NO, TIER_COSTS, YES, Events


def record(store: LedgerStore, event: object) -> LedgerUpdate:
    if isinstance(event, pb.Oracle):
        return store.record_oracle(event)
    if isinstance(event, pb.Verdict):
        return store.record_verdict(event)
    if isinstance(event, pb.Abstain):
        return store.record_abstain(event)
    assert isinstance(event, pb.Review)
    return store.record_review(event)


def test_a_redelivered_verdict_is_counted_once(store: LedgerStore, ev: Events) -> None:
    store.record_oracle(ev.oracle())
    first = store.record_verdict(ev.verdict(0, YES, tier=2))
    again = store.record_verdict(ev.verdict(0, YES, tier=2))
    assert first.changed
    assert not first.duplicate
    assert again.duplicate
    assert not again.changed
    result = store.get_result(ev.case_id)
    assert result is not None
    assert result.total_cost_usd == pytest.approx(TIER_COSTS[0] + TIER_COSTS[1])
    assert sum(c.accepted for c in result.criteria) == 1
    assert len(store.list_results()) == 1


def test_result_is_published_when_complete_then_on_every_change(
    store: LedgerStore, ev: Events
) -> None:
    steps = [
        (ev.verdict(0, YES), False),  # incomplete: stored, not published
        (ev.oracle(), False),
        (ev.verdict(1, YES), False),
        (ev.abstain(2), True),  # complete: ABSTAIN
        (ev.abstain(2), True),  # redelivered: published again (the first may have been lost)
        (ev.review(2, YES), True),  # changes the result: PASS
        (ev.review(0, NO, reviewer="bob"), False),  # agreement review: result unchanged
    ]
    outcomes = []
    for event, publish in steps:
        update = record(store, event)
        assert update.publish is publish, event
        outcomes.append(update.result.outcome)
    assert (
        outcomes == [pb.OUTCOME_UNSPECIFIED] * 3 + [pb.OUTCOME_ABSTAIN] * 2 + [pb.OUTCOME_PASS] * 2
    )
    final = store.get_result(ev.case_id)
    assert final is not None
    assert final.complete
    assert is_reviewed(final.criteria[2])
    assert final.meta.HasField("created_at")


def test_every_arrival_order_gives_the_same_result(store: LedgerStore) -> None:
    rng = random.Random(4)
    orders = list(itertools.permutations(range(5)))
    rng.shuffle(orders)
    finals = set()
    for n, order in enumerate(orders[:12]):
        ev = Events(case_id=f"nutrition-order{n}")
        events = [
            ev.oracle(),
            ev.verdict(0, YES, tier=3),
            ev.verdict(1, YES),
            ev.abstain(2),
            ev.review(2, NO),
        ]
        for position in order:
            record(store, events[position])
        result = store.get_result(ev.case_id)
        assert result is not None
        assert result.outcome == pb.OUTCOME_FAIL
        assert result.complete
        result.meta.ClearField("created_at")
        finals.add(MessageToJson(result).replace(ev.case_id, "CASE"))
    assert len(finals) == 1


def test_an_agreement_review_is_stored_and_counted_once(store: LedgerStore, ev: Events) -> None:
    def count(agreed: str) -> float:
        value = REGISTRY.get_sample_value(
            "reag_review_agreement_total", {"tier": "2", "agreed": agreed}
        )
        return value or 0.0

    before_true, before_false = count("true"), count("false")
    store.record_verdict(ev.verdict(0, YES, tier=2))
    store.record_review(ev.review(0, YES, reviewer="ann"))
    store.record_review(ev.review(0, YES, reviewer="ann"))  # redelivered
    store.record_review(ev.review(0, NO, reviewer="bob"))
    assert count("true") - before_true == 1
    assert count("false") - before_false == 1
    assert [r.reviewer for r in store.reviews(ev.cid(0))] == ["ann", "bob"]
    assert {(a.reviewer, a.tier, a.agreed) for a in store.agreement(ev.cid(0))} == {
        ("ann", 2, True),
        ("bob", 2, False),
    }
    result = store.get_result(ev.case_id)
    assert result is not None
    assert result.criteria[0].label == YES


def test_a_review_before_the_verdict_is_compared_when_the_verdict_arrives(
    store: LedgerStore, ev: Events
) -> None:
    store.record_review(ev.review(1, NO))
    assert store.agreement(ev.cid(1)) == []
    store.record_verdict(ev.verdict(1, YES))
    assert [a.agreed for a in store.agreement(ev.cid(1))] == [False]


def test_listing_filters_by_app_run_and_outcome(store: LedgerStore) -> None:
    cases = {
        ("a", "r1", YES): Events("a-1", app="a", run_id="r1", n=1),
        ("a", "r2", NO): Events("a-2", app="a", run_id="r2", n=1),
        ("b", "r1", YES): Events("b-1", app="b", run_id="r1", n=1),
    }
    for (_, _, label), ev in cases.items():
        store.record_verdict(ev.verdict(0, label))
    assert [r.meta.case_id for r in store.list_results()] == ["a-1", "a-2", "b-1"]
    assert [r.meta.case_id for r in store.list_results(app="a")] == ["a-1", "a-2"]
    assert [r.meta.case_id for r in store.list_results(run_id="r1")] == ["a-1", "b-1"]
    assert [r.meta.case_id for r in store.list_results(outcome=pb.OUTCOME_FAIL)] == ["a-2"]
    assert [r.meta.case_id for r in store.list_results(limit=1, offset=1)] == ["a-2"]
    summary = store.summary(app="a")
    assert (summary.cases, summary.passed, summary.failed) == (2, 1, 1)
    assert store.get_result("nobody") is None


def test_the_oracle_keeps_which_documents_were_retrieved_but_not_their_text(
    store: LedgerStore, ev: Events
) -> None:
    store.record_oracle(ev.oracle())
    again = store.record_oracle(ev.oracle())
    assert again.duplicate
    result = store.get_result(ev.case_id)
    assert result is not None
    assert len(result.criteria) == ev.n
    assert result.outcome == pb.OUTCOME_UNSPECIFIED
    assert not result.complete
    oracle = store.get_oracle(ev.case_id)
    assert oracle is not None
    assert [d.doc_id for d in oracle.interpretation.documents] == ["requirement/r1"]
    assert oracle.interpretation.documents[0].content == ""
    assert store.get_oracle("nobody") is None


def test_concurrent_writers_on_one_case_lose_nothing(store: LedgerStore) -> None:
    ev = Events(case_id="nutrition-threads", n=8)
    errors: list[BaseException] = []

    def write(index: int) -> None:
        try:
            store.record_verdict(ev.verdict(index, YES))
        except BaseException as exc:  # noqa: BLE001 - a thread must report every failure
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    result = store.get_result(ev.case_id)
    assert result is not None
    assert result.outcome == pb.OUTCOME_PASS
    assert len(result.criteria) == 8


def test_an_event_without_a_case_id_is_refused(store: LedgerStore, ev: Events) -> None:
    verdict = ev.verdict(0, YES)
    verdict.meta.case_id = ""
    with pytest.raises(EventWithoutCaseError, match="case_id"):
        store.record_verdict(verdict)
