"""The outcome rules as a pure function: every combination of criterion states."""

from __future__ import annotations

import itertools

import pytest

from reag.ledger.outcome import CaseEvents, build_result, is_reviewed, reviewer_of
from reag.v1 import events_pb2 as pb

from .conftest import NO, TIER_COSTS, YES, Events

STATES = ("pending", "yes", "no", "abstain", "abstain+yes", "abstain+no")


def case_with(ev: Events, states: tuple[str, ...], *, with_oracle: bool) -> CaseEvents:
    events = CaseEvents(
        case_id=ev.case_id, meta=ev.meta(), oracle=ev.oracle() if with_oracle else None
    )
    for index, state in enumerate(states):
        if state in ("yes", "no"):
            events.verdicts[ev.cid(index)] = ev.verdict(index, YES if state == "yes" else NO)
            events.n_criteria = ev.n
        if state.startswith("abstain"):
            events.abstains[ev.cid(index)] = ev.abstain(index)
            events.n_criteria = ev.n
        if state.endswith(("+yes", "+no")):
            label = YES if state.endswith("+yes") else NO
            events.reviews[ev.cid(index)] = [ev.review(index, label)]
    return events


def expected(states: tuple[str, ...], *, known: bool) -> tuple[int, set[int]]:
    """The rules restated plainly: (outcome, indices of open criteria)."""
    decided = {i: s for i, s in enumerate(states) if s in ("yes", "no") or "+" in s}
    open_ = {i for i in range(len(states)) if i not in decided}
    if any(s.endswith("no") for s in decided.values()):
        return pb.OUTCOME_FAIL, open_
    if "pending" in states or not known:
        return pb.OUTCOME_UNSPECIFIED, open_
    if not open_:
        return pb.OUTCOME_PASS, open_
    return pb.OUTCOME_ABSTAIN, open_


@pytest.mark.parametrize("with_oracle", [True, False])
def test_every_combination_of_three_criteria_follows_the_rules(with_oracle: bool) -> None:
    ev = Events(n=3)
    for states in itertools.product(STATES, repeat=3):
        events = case_with(ev, states, with_oracle=with_oracle)
        result = build_result(events)
        known = with_oracle or any(s != "pending" for s in states)
        outcome, open_ = expected(states, known=known)
        assert result.outcome == outcome, states
        assert result.complete == ("pending" not in states and known), states
        listed = {c.criterion.criterion_id for c in result.criteria}
        if with_oracle:
            assert listed == {ev.cid(i) for i in range(3)}
            assert set(result.open_criteria) == {ev.cid(i) for i in open_}, states
        else:  # without the oracle only criteria some event named are known
            named = {ev.cid(i) for i, s in enumerate(states) if s != "pending"}
            assert listed == named
            assert set(result.open_criteria) == {ev.cid(i) for i in open_} & named, states


def test_a_criterion_decided_at_tier_three_is_charged_for_every_tier(ev: Events) -> None:
    events = case_with(ev, ("yes", "yes", "yes"), with_oracle=True)
    events.verdicts[ev.cid(2)] = ev.verdict(2, YES, tier=3)
    result = build_result(events)
    by_id = {c.criterion.criterion_id: c for c in result.criteria}
    assert by_id[ev.cid(2)].cost_usd == pytest.approx(sum(TIER_COSTS))
    assert [a.tier for a in by_id[ev.cid(2)].history] == [1, 2, 3]
    assert by_id[ev.cid(0)].cost_usd == pytest.approx(TIER_COSTS[0])
    assert result.total_cost_usd == pytest.approx(2 * TIER_COSTS[0] + sum(TIER_COSTS))


def test_cost_falls_back_to_the_history_when_the_running_total_is_missing(ev: Events) -> None:
    events = case_with(ev, ("yes", "yes", "yes"), with_oracle=True)
    verdict = ev.verdict(0, YES, tier=2)
    verdict.cumulative_cost_usd = 0.0
    events.verdicts[ev.cid(0)] = verdict
    result = build_result(events)
    assert result.criteria[0].cost_usd == pytest.approx(TIER_COSTS[0] + TIER_COSTS[1])


def test_a_review_resolves_an_abstain_as_a_human_verdict_keeping_the_machine_history(
    ev: Events,
) -> None:
    events = case_with(ev, ("yes", "yes", "abstain+no"), with_oracle=True)
    result = build_result(events)
    reviewed = result.criteria[2]
    assert result.outcome == pb.OUTCOME_FAIL
    assert reviewed.label == NO
    assert reviewed.abstained
    assert not reviewed.accepted
    assert is_reviewed(reviewed)
    assert reviewer_of(reviewed) == "ann"
    assert [a.tier for a in reviewed.history] == [1, 2, 3, 0]
    assert reviewed.tier == 3  # where the cascade gave up
    assert reviewed.cost_usd == pytest.approx(sum(TIER_COSTS))
    assert not is_reviewed(result.criteria[0])


def test_the_latest_review_wins(ev: Events) -> None:
    events = case_with(ev, ("yes", "yes", "abstain"), with_oracle=True)
    events.reviews[ev.cid(2)] = [
        ev.review(2, NO, reviewer="zed", minutes=1),
        ev.review(2, YES, reviewer="ann", minutes=5),
    ]
    result = build_result(events)
    assert result.outcome == pb.OUTCOME_PASS
    assert reviewer_of(result.criteria[2]) == "ann"


def test_an_accepted_verdict_outranks_an_abstain_and_its_review(ev: Events) -> None:
    events = case_with(ev, ("yes", "yes", "abstain+no"), with_oracle=True)
    events.verdicts[ev.cid(2)] = ev.verdict(2, YES, tier=2)
    result = build_result(events)
    assert result.outcome == pb.OUTCOME_PASS
    assert result.criteria[2].accepted
    assert not result.criteria[2].abstained
    assert not is_reviewed(result.criteria[2])


def test_context_comes_from_the_oracle_or_else_from_an_abstain(ev: Events) -> None:
    with_oracle = build_result(case_with(ev, ("yes", "yes", "yes"), with_oracle=True))
    assert with_oracle.query == "What should I eat tonight?"
    assert with_oracle.persona_category == "diabetic"
    assert with_oracle.test_objective == "Check the meal plan."
    assert with_oracle.oracle_id == f"{ev.case_id}/oracle"
    from_abstain = build_result(case_with(ev, ("abstain", "yes", "yes"), with_oracle=False))
    assert from_abstain.query == "What should I eat tonight?"
    assert from_abstain.persona_category == "diabetic"
    only_verdicts = build_result(case_with(ev, ("yes", "yes", "yes"), with_oracle=False))
    assert only_verdicts.query == ""
    assert only_verdicts.complete


def test_criteria_are_ordered_by_index_and_meta_is_the_case_s(ev: Events) -> None:
    events = CaseEvents(case_id=ev.case_id, meta=ev.meta(), n_criteria=3)
    for index in (2, 0, 1):
        events.verdicts[ev.cid(index)] = ev.verdict(index, YES)
    result = build_result(events)
    assert [c.criterion.index for c in result.criteria] == [0, 1, 2]
    assert result.meta.case_id == ev.case_id
    assert result.meta.run_id == "run-1"
    assert not result.meta.HasField("created_at")


def test_an_accepted_audit_costs_every_tier_that_scored_it_and_stays_accepted(ev: Events) -> None:
    verdict = ev.verdict(0, YES, tier=1)
    copy = ev.abstain(0)
    copy.audit = True
    copy.request.audit = True
    del copy.request.history[:]
    copy.request.history.extend(ev.attempts((1, 2, 3), (YES, YES, NO), last_accepted=False))
    copy.request.history[0].accepted = True
    events = CaseEvents(case_id=ev.case_id, meta=ev.meta(), oracle=ev.oracle(), n_criteria=1)

    events.abstains[ev.cid(0)] = copy
    alone = build_result(events).criteria[0]
    assert not alone.abstained
    assert not alone.accepted

    events.verdicts[ev.cid(0)] = verdict
    criterion = build_result(events).criteria[0]
    assert criterion.accepted
    assert criterion.label == YES
    assert criterion.tier == 1
    assert criterion.cost_usd == pytest.approx(sum(TIER_COSTS))
    assert criterion.cost_usd > verdict.cumulative_cost_usd
