"""A reviewer's newest review wins by its own time, whatever order the reviews arrive in."""

from __future__ import annotations

import itertools

from reag.ledger.store import LedgerStore
from reag.v1 import events_pb2 as pb

from .conftest import NO, YES, Events


def test_a_replayed_older_review_does_not_overwrite_the_newer_one(
    store: LedgerStore, ev: Events
) -> None:
    store.record_verdict(ev.verdict(0, YES, tier=2))
    store.record_review(ev.review(0, NO, minutes=10, comment="first look"))
    newer = ev.review(0, YES, minutes=20, comment="second look")
    store.record_review(newer)
    assert [a.agreed for a in store.agreement(ev.cid(0))] == [True]

    update = store.record_review(ev.review(0, NO, minutes=10, comment="first look"))  # replayed

    assert not update.changed
    assert store.reviews(ev.cid(0)) == [newer]
    assert [(a.tier, a.agreed) for a in store.agreement(ev.cid(0))] == [(2, True)]


def test_a_newer_review_replaces_the_label_and_agreement_is_recomputed(
    store: LedgerStore, ev: Events
) -> None:
    store.record_verdict(ev.verdict(1, YES, tier=3))
    store.record_review(ev.review(1, YES, minutes=1))
    assert [a.agreed for a in store.agreement(ev.cid(1))] == [True]

    store.record_review(ev.review(1, NO, minutes=2))

    assert [r.label for r in store.reviews(ev.cid(1))] == [NO]
    assert [(a.tier, a.agreed) for a in store.agreement(ev.cid(1))] == [(3, False)]
    result = store.get_result(ev.case_id)
    assert result is not None


def test_every_arrival_order_ends_with_the_same_review(sqlite_dsn: str, ev: Events) -> None:
    reviews = [
        ev.review(2, NO, minutes=5),
        ev.review(2, YES, minutes=30, comment="settled"),
        ev.review(2, NO, minutes=30, comment="same minute, other text"),
        ev.review(2, YES, minutes=1),
    ]
    kept: set[bytes] = set()
    for n, order in enumerate(itertools.permutations(reviews)):
        store = LedgerStore.open(sqlite_dsn.replace(".db", f"-{n}.db"))
        try:
            store.record_verdict(ev.verdict(2, YES))
            for review in order:
                store.record_review(review)
            (stored,) = store.reviews(ev.cid(2))
            kept.add(stored.SerializeToString(deterministic=True))
            (agreement,) = store.agreement(ev.cid(2))
            assert agreement.agreed == (stored.label == YES)
        finally:
            store.close()
    assert len(kept) == 1
    assert (
        pb.Review.FromString(kept.pop()).reviewed_at.ToSeconds()
        == reviews[1].reviewed_at.ToSeconds()
    )
