"""The outcome rules: one ``pb.Result`` per test case from whatever has arrived so far.

Events reach the ledger in any order (the oracle, verdict, abstain and review
topics are partitioned independently), so the result is always recomputed
from the full set of events known for a case, never patched incrementally.
That makes the computation a pure function of its inputs: a redelivered event
changes nothing, and two arrival orders of the same events give the same result.

Rules, per criterion:
- an accepted machine verdict decides it (its label, tier and confidence);
- otherwise, an abstain followed by a reviewer's label decides it as a human
  verdict: the machine history is kept and one attempt with ``tier`` 0 and
  ``method`` ``"review"`` is appended, which is how a result marks a criterion
  as reviewed without a separate field in the contract;
- an abstain without a review leaves it open;
- nothing yet: it is pending.
Per case: FAIL as soon as any decided criterion is NO; PASS when the case is
complete and every criterion is decided YES; ABSTAIN when it is complete but
some criterion is open; while incomplete and not failed the outcome stays
``OUTCOME_UNSPECIFIED`` (pending).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from reag.trust.audit import is_review_copy
from reag.v1 import events_pb2 as pb

REVIEW_METHOD = "review"
HUMAN_TIER = 0


@dataclass(slots=True)
class CaseEvents:
    """Everything the ledger holds for one case; the input of ``build_result``."""

    case_id: str
    meta: pb.EventMeta
    oracle: pb.Oracle | None = None
    n_criteria: int = 0
    verdicts: dict[str, pb.Verdict] = field(default_factory=dict)
    abstains: dict[str, pb.Abstain] = field(default_factory=dict)
    reviews: dict[str, list[pb.Review]] = field(default_factory=dict)

    def expected_criteria(self) -> int:
        oracle_n = len(self.oracle.criteria) if self.oracle is not None else 0
        return max(self.n_criteria, oracle_n)


def history_cost(history: Iterable[pb.TierAttempt]) -> float:
    return sum(attempt.cost_usd for attempt in history)


def verdict_cost(verdict: pb.Verdict) -> float:
    """Every tier that ran is charged; the judges' running total is preferred when present."""
    return verdict.cumulative_cost_usd or history_cost(verdict.history)


def abstain_cost(abstain: pb.Abstain) -> float:
    return abstain.cumulative_cost_usd or history_cost(abstain.request.history)


def latest_review(reviews: Sequence[pb.Review]) -> pb.Review | None:
    """The most recent label wins; ties go to the reviewer name, so the pick is stable."""
    if not reviews:
        return None
    return max(
        reviews,
        key=lambda r: (r.reviewed_at.seconds, r.reviewed_at.nanos, r.reviewer, r.label),
    )


def is_reviewed(criterion: pb.CriterionResult) -> bool:
    return any(attempt.method == REVIEW_METHOD for attempt in criterion.history)


def reviewer_of(criterion: pb.CriterionResult) -> str | None:
    for attempt in criterion.history:
        if attempt.method == REVIEW_METHOD:
            return attempt.model.removeprefix("human:")
    return None


def is_decided(criterion: pb.CriterionResult) -> bool:
    return criterion.label != pb.LABEL_UNSPECIFIED


def _criteria_texts(events: CaseEvents) -> dict[str, pb.Criterion]:
    """Criterion texts from every source, the oracle's taking precedence."""
    texts: dict[str, pb.Criterion] = {}
    for criterion_id, abstain in events.abstains.items():
        if abstain.request.HasField("criterion"):
            texts[criterion_id] = abstain.request.criterion
    for criterion_id, verdict in events.verdicts.items():
        if verdict.HasField("criterion"):
            texts[criterion_id] = verdict.criterion
    if events.oracle is not None:
        for criterion in events.oracle.criteria:
            texts[criterion.criterion_id] = criterion
    return texts


def _order(criterion_ids: Iterable[str], texts: Mapping[str, pb.Criterion]) -> list[str]:
    def key(criterion_id: str) -> tuple[int, int, str]:
        criterion = texts.get(criterion_id)
        if criterion is not None and criterion.criterion_id:
            return (0, criterion.index, criterion_id)
        return (1, 0, criterion_id)

    return sorted(set(criterion_ids), key=key)


def _criterion_result(
    criterion_id: str, texts: Mapping[str, pb.Criterion], events: CaseEvents
) -> pb.CriterionResult:
    result = pb.CriterionResult()
    criterion = texts.get(criterion_id)
    if criterion is not None:
        result.criterion.CopyFrom(criterion)
    if not result.criterion.criterion_id:
        result.criterion.criterion_id = criterion_id

    verdict = events.verdicts.get(criterion_id)
    abstain = events.abstains.get(criterion_id)
    if verdict is not None:
        result.label = verdict.label
        result.accepted = True
        result.provisional = verdict.provisional
        result.tier = verdict.tier
        result.confidence = verdict.confidence
        result.cost_usd = verdict_cost(verdict)
        if abstain is not None and is_review_copy(abstain):
            # An audit: the tiers after the deciding one scored it too, and every call is paid.
            result.cost_usd = max(result.cost_usd, abstain_cost(abstain))
        result.evidence.extend(verdict.evidence)
        result.history.extend(verdict.history)
        return result
    if abstain is None or is_review_copy(abstain):
        return result  # an audit's copy for review: its accepted verdict is still on the way

    request = abstain.request
    result.abstained = True
    result.cost_usd = abstain_cost(abstain)
    result.evidence.extend(request.evidence)
    result.history.extend(request.history)
    if request.history:
        last = request.history[-1]
        result.tier, result.confidence = last.tier, last.confidence
    review = latest_review(events.reviews.get(criterion_id, ()))
    if review is not None:
        result.label = review.label
        result.history.append(
            pb.TierAttempt(
                tier=HUMAN_TIER,
                model=f"human:{review.reviewer}",
                verdict=review.label,
                confidence=1.0,
                method=REVIEW_METHOD,
                accepted=True,
            )
        )
    return result


def _first_text(*candidates: str) -> str:
    return next((c for c in candidates if c), "")


def _context(events: CaseEvents) -> tuple[str, str, str]:
    """(query, persona category, test objective) from the oracle, else from any abstain."""
    query = persona = objective = ""
    if events.oracle is not None:
        intention = events.oracle.interpretation.intention
        query = intention.query
        persona = _first_text(intention.persona.category_name, intention.persona.category_id)
        objective = events.oracle.test_objective
    for abstain in events.abstains.values():
        request = abstain.request
        query = query or request.query
        persona = persona or _first_text(request.persona.category_name, request.persona.category_id)
        objective = objective or request.test_objective
    return query, persona, objective


def _oracle_id(events: CaseEvents) -> str:
    if events.oracle is not None and events.oracle.oracle_id:
        return events.oracle.oracle_id
    for verdict in events.verdicts.values():
        if verdict.oracle_id:
            return verdict.oracle_id
    for abstain in events.abstains.values():
        if abstain.request.oracle_id:
            return abstain.request.oracle_id
    return ""


def _is_complete(events: CaseEvents, reached: set[str]) -> bool:
    expected = events.expected_criteria()
    if expected == 0:
        return False
    oracle_criteria = events.oracle.criteria if events.oracle is not None else ()
    if not all(c.criterion_id in reached for c in oracle_criteria):
        return False
    return len(reached) >= expected


def decide(criteria: Sequence[pb.CriterionResult], *, complete: bool) -> pb.Outcome.ValueType:
    if any(c.label == pb.LABEL_NO for c in criteria):
        return pb.OUTCOME_FAIL
    if not complete:
        return pb.OUTCOME_UNSPECIFIED
    if all(c.label == pb.LABEL_YES for c in criteria):
        return pb.OUTCOME_PASS
    return pb.OUTCOME_ABSTAIN


def firm(criterion: pb.CriterionResult) -> pb.CriterionResult:
    """The criterion as it stands without its provisional verdict: open again."""
    if not criterion.provisional:
        return criterion
    opened = pb.CriterionResult()
    opened.CopyFrom(criterion)
    opened.label = pb.LABEL_UNSPECIFIED
    opened.accepted = opened.provisional = False
    return opened


def rests_on_provisional(
    criteria: Sequence[pb.CriterionResult], outcome: pb.Outcome.ValueType, *, complete: bool
) -> bool:
    """True when the outcome would be another without the provisional verdicts: a FAIL
    with a certified NO beside a provisional one stands firm, a PASS with any does not."""
    if not any(c.provisional for c in criteria):
        return False
    return decide([firm(c) for c in criteria], complete=complete) != outcome


def build_result(events: CaseEvents) -> pb.Result:
    """The case's result now; ``meta.created_at`` is left for the caller to stamp."""
    texts = _criteria_texts(events)
    reached = set(events.verdicts) | set(events.abstains)
    ids = _order([*texts, *reached], texts)
    criteria = [_criterion_result(criterion_id, texts, events) for criterion_id in ids]
    complete = _is_complete(events, reached)

    outcome = decide(criteria, complete=complete)
    result = pb.Result(
        oracle_id=_oracle_id(events),
        outcome=outcome,
        complete=complete,
        total_cost_usd=sum(c.cost_usd for c in criteria),
        provisional=rests_on_provisional(criteria, outcome, complete=complete),
    )
    result.meta.CopyFrom(events.meta)
    result.meta.case_id = events.case_id
    result.meta.ClearField("created_at")
    result.criteria.extend(criteria)
    result.open_criteria.extend(c.criterion.criterion_id for c in criteria if not is_decided(c))
    result.query, result.persona_category, result.test_objective = _context(events)
    return result
