"""An audited criterion: every tier scores it, the verdict still goes out, review gets a copy."""

from __future__ import annotations

from reag.judging.cascade import next_step
from reag.trust.audit import is_review_copy
from reag.v1 import events_pb2 as pb

from .conftest import make_request
from .test_cascade_step import judgement
from .test_decision import threshold


def test_accepted_audit_goes_out_and_on_through_every_tier() -> None:
    request = make_request()
    request.audit = True
    one = next_step(request, judgement(0.99, "NO"), threshold(0.95), tier=1, n_tiers=2)
    assert one.decision == "accepted"
    assert one.verdict is not None
    assert one.verdict.audit
    assert one.verdict.tier == 1
    assert one.escalation is not None
    assert one.escalation.audit
    two = next_step(one.escalation, judgement(0.99, "YES"), threshold(0.95), tier=2, n_tiers=2)
    assert two.decision == "audited"
    assert two.verdict is None  # the cascade decided at tier 1
    assert two.abstain is not None
    assert two.abstain.audit
    assert [a.tier for a in two.abstain.request.history] == [1, 2]
    assert [a.confidence for a in two.abstain.request.history] == [0.99, 0.99]
    assert is_review_copy(two.abstain)
    assert two.abstain.cumulative_cost_usd == 0.02


def test_unaccepted_audit_is_an_abstention_and_a_review_item() -> None:
    request = make_request()
    request.audit = True
    one = next_step(request, judgement(0.6), threshold(0.95), tier=1, n_tiers=2)
    assert one.decision == "escalated"
    assert one.verdict is None
    two = next_step(one.escalation or pb.JudgeRequest(), judgement(0.6), None, tier=2, n_tiers=2)
    assert two.decision == "abstained"
    assert two.abstain is not None
    assert two.abstain.audit
    assert not is_review_copy(two.abstain)


def test_last_tier_accepting_an_audit_sends_verdict_and_review_copy() -> None:
    request = make_request()
    request.audit = True
    step = next_step(request, judgement(0.99), threshold(0.95), tier=1, n_tiers=1)
    assert step.verdict is not None
    assert step.abstain is not None
    assert is_review_copy(step.abstain)


def test_plain_criterion_is_unchanged() -> None:
    step = next_step(make_request(), judgement(0.99), threshold(0.95), tier=1, n_tiers=2)
    assert step.verdict is not None
    assert step.escalation is None
    assert step.abstain is None
