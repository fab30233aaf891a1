"""One cascade step: accept, escalate with history, abstain past the last tier; honest cost."""

from __future__ import annotations

import pytest

from reag.judging.cascade import next_step
from reag.judging.exemplars import Label
from reag.judging.judge import Judgement
from reag.llm.base import Usage
from reag.v1 import events_pb2 as pb

from .conftest import make_request
from .test_decision import threshold


def judgement(confidence: float, verdict: Label = "YES", cost: float = 0.01) -> Judgement:
    p = confidence if verdict == "YES" else 1 - confidence
    return Judgement(
        verdict=verdict,
        confidence=confidence,
        p_yes=(p,) * 5,
        method="logprobs",
        model="fake:judge",
        cost_usd=cost,
        usage=Usage(500, 5),
        latency_s=0.2,
        n_calls=5,
    )


def test_confident_verdict_is_accepted_with_history_and_cost() -> None:
    step = next_step(make_request(), judgement(0.97, "NO"), threshold(0.95), tier=1, n_tiers=3)
    assert step.decision == "accepted"
    assert step.verdict is not None
    v = step.verdict
    assert v.label == pb.LABEL_NO
    assert v.tier == 1
    assert v.threshold == pytest.approx(0.95)
    assert v.criterion_id == "case-1/c0"
    assert v.meta.case_id == "case-1"
    assert v.n_criteria == 2
    assert [a.tier for a in v.history] == [1]
    assert v.history[0].accepted
    assert v.cumulative_cost_usd == pytest.approx(0.01)
    assert list(v.history[0].annotator_yes) == pytest.approx([0.03] * 5)


def test_unconfident_verdict_escalates_with_this_attempt_appended() -> None:
    step = next_step(make_request(), judgement(0.8), threshold(0.95), tier=1, n_tiers=3)
    assert step.decision == "escalated"
    assert step.escalation is not None
    attempt = step.escalation.history[-1]
    assert attempt.tier == 1
    assert not attempt.accepted
    assert attempt.has_threshold
    assert attempt.prompt_tokens == 500
    assert attempt.method == "logprobs"
    assert step.escalation.actual_response == make_request().actual_response


def test_cumulative_cost_charges_every_tier_passed() -> None:
    request = make_request()
    one = next_step(request, judgement(0.8, cost=0.01), threshold(0.95), tier=1, n_tiers=3)
    assert one.escalation is not None
    two = next_step(one.escalation, judgement(0.7, cost=0.03), None, tier=2, n_tiers=3)
    assert two.escalation is not None
    three = next_step(
        two.escalation, judgement(0.99, cost=0.05), threshold(0.98, tier=3), tier=3, n_tiers=3
    )
    assert three.decision == "accepted"
    assert three.verdict is not None
    assert three.verdict.cumulative_cost_usd == pytest.approx(0.09)
    assert [a.tier for a in three.verdict.history] == [1, 2, 3]
    assert not three.verdict.history[1].has_threshold


def test_past_the_last_tier_the_criterion_is_abstained_for_review() -> None:
    request = make_request()
    for tier in (1, 2):
        step = next_step(request, judgement(0.6, cost=0.02), None, tier=tier, n_tiers=3)
        assert step.escalation is not None
        request = step.escalation
    last = next_step(request, judgement(0.7, cost=0.02), threshold(0.9, tier=3), tier=3, n_tiers=3)
    assert last.decision == "abstained"
    assert last.abstain is not None
    a = last.abstain
    assert [h.tier for h in a.request.history] == [1, 2, 3]
    assert a.cumulative_cost_usd == pytest.approx(0.06)
    assert a.request.criterion.text
    assert a.request.evidence
    assert a.request.persona.category_id
    assert "tier 1" in a.reason
    assert "no calibrated threshold" in a.reason
    assert "λ̂" in a.reason


def test_a_verdict_under_a_provisional_threshold_is_marked_provisional() -> None:
    borrowed = threshold(0.95)
    borrowed.provisional = True
    step = next_step(make_request(), judgement(0.97), borrowed, tier=1, n_tiers=1)
    assert step.verdict is not None
    assert step.verdict.provisional
    own = next_step(make_request(), judgement(0.97), threshold(0.95), tier=1, n_tiers=1)
    assert own.verdict is not None
    assert not own.verdict.provisional
