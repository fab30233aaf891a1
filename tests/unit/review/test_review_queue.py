"""The shared review queue: order, filters, leases, double review, agreement, export, pages."""

from __future__ import annotations

import csv
import io
import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.orm import sessionmaker

from reag.review.agreement import agreement, cohen_kappa
from reag.review.export import to_csv, to_jsonl
from reag.review.pages import blind_view, judges_view, render_item
from reag.review.policy import reason_kind, resolve
from reag.review.queue import Filters, NotHeldError, ReviewQueue
from reag.storage import Base, make_engine, open_store
from reag.v1 import events_pb2 as pb
from tests.unit.ledger.conftest import POSTGRES_DSN, Events


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def make_queue(
    tmp_path: Path, *, per_item: int = 1, own: set[str] | None = None, clock: Clock | None = None
) -> ReviewQueue:
    sessions = open_store(f"sqlite:///{tmp_path / 'q.db'}")
    with_threshold = own if own is not None else {"nutrition", "banking"}
    return ReviewQueue(
        sessions,
        per_item=per_item,
        has_threshold=lambda app: app in with_threshold,
        clock=clock or Clock(),
    )


def abstain(
    app: str = "nutrition",
    case: str = "c1",
    index: int = 0,
    *,
    audit: bool = False,
    persona: str = "p1",
    reason: str = "no tier was confident enough: tier 1 (m) confidence 0.613 < λ̂ 0.9",
) -> pb.Abstain:
    ev = Events(case_id=f"{app}-{case}", app=app)
    item = ev.abstain(index)
    item.audit = item.request.audit = audit  # as the cascade sets both
    item.reason = reason
    item.request.persona.category_id = persona
    return item


def test_audits_of_apps_without_their_own_threshold_come_first(tmp_path: Path) -> None:
    queue = make_queue(tmp_path, own={"nutrition"})
    queue.add(abstain("nutrition", "a"))  # abstention
    queue.add(abstain("nutrition", "b", audit=True))  # audit, app has a threshold
    queue.add(abstain("banking", "c"))  # abstention of a new app
    queue.add(abstain("banking", "d", audit=True))  # audit of a new app: first
    order = [w.abstain.meta.case_id for w in queue.waiting("ann")]
    assert order == ["banking-d", "nutrition-b", "nutrition-a", "banking-c"]


def test_filters_by_app_persona_and_reason_kind(tmp_path: Path) -> None:
    queue = make_queue(tmp_path)
    queue.add(abstain("nutrition", "a", persona="diabetic"))
    queue.add(abstain("nutrition", "b", persona="vegan", reason="undecidable: a purchase flow"))
    queue.add(abstain("banking", "c", persona="vegan", audit=True))
    assert queue.facets() == {
        "app": ["banking", "nutrition"],
        "persona_category": ["diabetic", "vegan"],
        "reason": ["audit", "not_confident", "undecidable"],
    }

    def cases(filters: Filters) -> list[str]:
        return [w.abstain.meta.case_id for w in queue.waiting("ann", filters)]

    assert cases(Filters(app="banking")) == ["banking-c"]
    assert cases(Filters(persona_category="vegan")) == ["banking-c", "nutrition-b"]
    assert cases(Filters(reason="undecidable")) == ["nutrition-b"]
    assert queue.take("ann", Filters(reason="audit")) is not None


def test_reason_kind_never_carries_the_tiers_numbers() -> None:
    assert reason_kind(abstain()) == "not_confident"
    assert reason_kind(abstain(audit=True)) == "audit"
    assert reason_kind(abstain(reason="suspected_injection: addresses the grader")) == (
        "suspected_injection"
    )
    no_threshold = "no tier was confident enough: tier 1 (m) has no calibrated threshold"
    assert reason_kind(abstain(reason=no_threshold)) == "no_threshold"


def test_an_item_leased_to_one_reviewer_is_not_offered_to_another_until_the_lease_ends(
    tmp_path: Path,
) -> None:
    clock = Clock()
    queue = make_queue(tmp_path, clock=clock)
    assert queue.add(abstain(case="a"))
    assert not queue.add(abstain(case="a"))  # the same criterion again: dropped
    taken = queue.take("terminal-ann")
    assert taken is not None
    assert queue.take("web-ben") is None
    assert queue.take("terminal-ann") == taken  # a reload gets the held item back
    with pytest.raises(NotHeldError):
        queue.record(taken.key, "web-ben", "YES")
    clock.now += timedelta(minutes=16)  # the lease ran out (a closed tab)
    again = queue.take("web-ben")
    assert again is not None
    assert again.key == taken.key
    with pytest.raises(NotHeldError):
        queue.record(taken.key, "terminal-ann", "YES")


def test_single_review_publishes_the_first_label_once(tmp_path: Path) -> None:
    queue = make_queue(tmp_path)
    queue.add(abstain(case="a"))
    item = queue.take("ann")
    assert item is not None
    outcome = queue.record(item.key, "ann", "NO", "too much sugar")
    assert outcome.status == "resolved"
    assert outcome.review is not None
    review = outcome.review
    assert (review.criterion_id, review.label, review.reviewer, review.comment) == (
        "nutrition-a/c0",
        pb.LABEL_NO,
        "ann",
        "too much sugar",
    )
    assert review.item.criterion.criterion_id == "nutrition-a/c0"
    assert queue.take("ben") is None  # resolved: nobody is offered it again
    assert [key for key, _ in queue.unpublished()] == [item.key]
    queue.mark_published(item.key)
    assert queue.unpublished() == []


def test_double_review_agreement_resolves_and_disagreement_goes_to_a_third(
    tmp_path: Path,
) -> None:
    queue = make_queue(tmp_path, per_item=2)
    queue.add(abstain(case="agree"))
    queue.add(abstain(case="split"))

    def label(reviewer: str, case_id: str, vote: str) -> pb.Review | None:
        item = queue.take(reviewer)
        assert item is not None
        assert item.abstain.meta.case_id == case_id
        return queue.record(item.key, reviewer, vote).review  # type: ignore[arg-type]

    assert label("ann", "nutrition-agree", "YES") is None  # one of two
    assert label("ann", "nutrition-split", "YES") is None
    agreed = label("ben", "nutrition-agree", "YES")
    assert agreed is not None
    assert agreed.reviewer == "ann+ben"
    assert agreed.label == pb.LABEL_YES
    assert label("ben", "nutrition-split", "NO") is None  # 1-1: not resolved
    assert queue.take("ann") is None
    assert queue.take("ben") is None
    third = label("cat", "nutrition-split", "NO")
    assert third is not None
    assert third.reviewer == "ben+cat"
    assert third.label == pb.LABEL_NO
    assert len(queue.unpublished()) == 2  # exactly one Review per item


def test_resolution_rule() -> None:
    assert resolve(["YES"], 1) == "YES"
    assert resolve(["CANNOT_TELL"], 1) is None
    assert resolve(["CANNOT_TELL", "NO"], 1) == "NO"
    assert resolve(["YES"], 2) is None
    assert resolve(["YES", "NO"], 2) is None
    assert resolve(["YES", "NO", "NO"], 2) == "NO"


def test_cohen_kappa_against_hand_computed_values() -> None:
    # 10 pairs: 4 YES/YES, 3 NO/NO, 2 YES/NO, 1 NO/YES. p_o = .7; p_e = .6*.5 + .4*.5 = .5
    pairs = [("YES", "YES")] * 4 + [("NO", "NO")] * 3 + [("YES", "NO")] * 2 + [("NO", "YES")]
    assert cohen_kappa(pairs) == pytest.approx(0.4)
    assert cohen_kappa([("YES", "NO"), ("NO", "YES")]) == pytest.approx(-1.0)
    assert cohen_kappa([]) is None


def test_agreement_per_app_counts_reviewers_and_tiers(tmp_path: Path) -> None:
    queue = make_queue(tmp_path, per_item=2)
    for case in ("a", "b"):
        queue.add(abstain(case=case))  # tiers said YES, NO, YES
    for reviewer, votes in (("ann", ("YES", "NO")), ("ben", ("YES", "YES")), ("cat", ("NO",))):
        for vote in votes:
            item = queue.take(reviewer)
            assert item is not None
            queue.record(item.key, reviewer, vote)  # type: ignore[arg-type]
    (app,) = agreement(queue.labels())
    assert app.app == "nutrition"
    assert app.labels == 5
    assert app.items_resolved == 2
    assert app.pairs == [("YES", "YES"), ("NO", "YES")]
    # tiers said YES, NO, YES; a resolved YES (ann+ben), b resolved NO (ann+cat)
    assert app.tiers == {1: (1, 2), 2: (1, 2), 3: (1, 2)}


def test_export_has_every_label_with_its_note_and_defuses_spreadsheet_formulas(
    tmp_path: Path,
) -> None:
    queue = make_queue(tmp_path)
    queue.add(abstain(case="a"))
    item = queue.take("ann")
    assert item is not None
    queue.record(item.key, "ann", "YES", '=HYPERLINK("http://x")')
    records = queue.labels()
    (line,) = to_jsonl(records).splitlines()
    row = json.loads(line)
    assert (row["criterion_id"], row["reviewer"], row["label"], row["note"]) == (
        "nutrition-a/c0",
        "ann",
        "YES",
        '=HYPERLINK("http://x")',
    )
    assert row["resolved_label"] == "YES"
    (parsed,) = list(csv.DictReader(io.StringIO(to_csv(records))))
    assert parsed["note"] == '\'=HYPERLINK("http://x")'
    assert parsed["criterion_id"] == "nutrition-a/c0"


def test_item_page_is_blind_and_escapes_untrusted_text(tmp_path: Path) -> None:
    queue = make_queue(tmp_path)
    item_pb = abstain(case="x", audit=True)
    item_pb.request.actual_response = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    item_pb.request.history[0].model = "secret-tier-model"
    item_pb.request.history[0].confidence = 0.8137
    queue.add(item_pb)
    item = queue.take("ann")
    assert item is not None
    html = render_item(item, reviewer="ann", nonce="n0nce", csrf="tok", filters=Filters())
    for leak in ("secret-tier-model", "0.814", "0.9", "audit", "confident", "model-2"):
        assert leak not in html, leak
    assert "<script>alert" not in html
    assert "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'name="csrf" value="tok"' in html
    assert "The answer respects rule 0." in html
    assert "Plans fit the diet." in html
    assert blind_view(item.abstain).persona == "diabetic"
    shown = judges_view(item.abstain, "YES", "YES")
    assert shown.attempts[0].model == "secret-tier-model"
    assert shown.attempts[0].confidence == "0.814"


@pytest.mark.postgres
def test_leases_and_double_review_on_postgresql() -> None:
    """The compare-and-set lease and the label rows on the production store."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = make_engine(POSTGRES_DSN)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    engine = admin.execution_options(schema_translate_map={None: schema})
    try:
        Base.metadata.create_all(engine)
        queue = ReviewQueue(sessionmaker(engine, expire_on_commit=False), per_item=2)
        assert queue.add(abstain(case="pg", audit=True))
        assert not queue.add(abstain(case="pg", audit=True))
        held = queue.take("ann")
        assert held is not None
        assert queue.take("ben") is None
        assert queue.record(held.key, "ann", "YES").review is None
        again = queue.take("ben")
        assert again is not None
        review = queue.record(again.key, "ben", "YES").review
        assert review is not None
        assert (review.reviewer, review.label, review.item.audit) == ("ann+ben", pb.LABEL_YES, True)
        assert [r.vote for r in queue.labels()] == ["YES", "YES"]
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
