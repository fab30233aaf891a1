"""Run-level figures from stored results: outcome counts, coverage, per-tier traffic, cost.

Cost is honest (docs/architecture.md, "Honest cost"): a criterion that reached
tier 3 is charged for tiers 1, 2 and 3, because every tier that ran appears in
its history. ``deciding_tier_cost`` is computed beside it only to show how much
the paper's accounting (charging the deciding tier alone) would understate.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from reag.ledger.outcome import HUMAN_TIER, REVIEW_METHOD
from reag.v1 import api_pb2
from reag.v1 import events_pb2 as pb

OUTCOME_NAMES: dict[int, str] = {
    pb.OUTCOME_PASS: "PASS",
    pb.OUTCOME_FAIL: "FAIL",
    pb.OUTCOME_ABSTAIN: "ABSTAIN",
    pb.OUTCOME_UNSPECIFIED: "PENDING",
}
LABEL_NAMES: dict[int, str] = {pb.LABEL_YES: "YES", pb.LABEL_NO: "NO", pb.LABEL_UNSPECIFIED: "-"}


class UnknownOutcomeError(ValueError):
    """An outcome name on the command line that is not PASS, FAIL, ABSTAIN or PENDING."""


def outcome_name(result: pb.Result) -> str:
    return OUTCOME_NAMES.get(result.outcome, "PENDING")


def parse_outcome(name: str) -> pb.Outcome.ValueType:
    wanted = name.strip().upper()
    for value, known in OUTCOME_NAMES.items():
        if known == wanted:
            return pb.Outcome.ValueType(value)
    raise UnknownOutcomeError(
        f"{name!r} is not an outcome; use one of {', '.join(OUTCOME_NAMES.values())}"
    )


def machine_attempts(criterion: pb.CriterionResult) -> list[pb.TierAttempt]:
    """Judge attempts only (a reviewer's label is not a tier); synthesised if a judge sent none."""
    attempts = [a for a in criterion.history if a.tier != HUMAN_TIER and a.method != REVIEW_METHOD]
    if not attempts and criterion.accepted and criterion.tier:
        attempts = [
            pb.TierAttempt(
                tier=criterion.tier,
                verdict=criterion.label,
                confidence=criterion.confidence,
                cost_usd=criterion.cost_usd,
                accepted=True,
            )
        ]
    return attempts


def left_cascade(criterion: pb.CriterionResult) -> bool:
    return criterion.accepted or criterion.abstained


@dataclass(slots=True)
class TierFigures:
    """What one tier did for a set of criteria: the per-tier line of a summary."""

    requests: int = 0
    accepted: int = 0
    escalated: int = 0
    abstained: int = 0
    cost_usd: float = 0.0


@dataclass(slots=True)
class ResultFigures:
    """One result's share of a summary; the ledger stores it beside the result so that
    a summary is a SQL sum over cases, not a load of every result."""

    criteria: int = 0
    criteria_accepted: int = 0
    tiers: dict[int, TierFigures] = field(default_factory=dict)


def result_figures(result: pb.Result) -> ResultFigures:
    figures = ResultFigures()
    for criterion in result.criteria:
        if not left_cascade(criterion):
            continue
        figures.criteria += 1
        figures.criteria_accepted += int(criterion.accepted)
        attempts = machine_attempts(criterion)
        for position, attempt in enumerate(attempts):
            tier = figures.tiers.setdefault(attempt.tier, TierFigures())
            tier.requests += 1
            tier.cost_usd += attempt.cost_usd
            if position < len(attempts) - 1:
                tier.escalated += 1
            elif criterion.accepted:
                tier.accepted += 1
            else:
                tier.abstained += 1
    return figures


def summary_of(
    *,
    cases: int,
    passed: int,
    failed: int,
    abstained: int,
    total_cost_usd: float,
    criteria: int,
    criteria_accepted: int,
    tiers: Mapping[int, TierFigures],
) -> api_pb2.Summary:
    """The Summary message from totals, however they were added up (Python or SQL)."""
    summary = api_pb2.Summary(
        cases=cases,
        passed=passed,
        failed=failed,
        abstained=abstained,
        total_cost_usd=total_cost_usd,
        criteria=criteria,
        criteria_accepted=criteria_accepted,
    )
    summary.coverage = criteria_accepted / criteria if criteria else 0.0
    for number, tier in sorted(tiers.items()):
        summary.tiers.append(
            api_pb2.TierSummary(
                tier=number,
                requests=tier.requests,
                accepted=tier.accepted,
                escalated=tier.escalated,
                abstained=tier.abstained,
                cost_usd=tier.cost_usd,
            )
        )
    return summary


def summarize(results: Sequence[pb.Result]) -> api_pb2.Summary:
    """``criteria`` counts criteria that left the cascade (accepted or abstained): coverage
    is the share of those a judge accepted, the paper's selection coverage.

    For results already in hand (the CLI's list); ``LedgerStore.summary`` adds the same
    figures up in SQL."""
    outcomes = Counter(result.outcome for result in results)
    total = ResultFigures()
    for result in results:
        figures = result_figures(result)
        total.criteria += figures.criteria
        total.criteria_accepted += figures.criteria_accepted
        for number, tier in figures.tiers.items():
            into = total.tiers.setdefault(number, TierFigures())
            into.requests += tier.requests
            into.accepted += tier.accepted
            into.escalated += tier.escalated
            into.abstained += tier.abstained
            into.cost_usd += tier.cost_usd
    return summary_of(
        cases=len(results),
        passed=outcomes[pb.OUTCOME_PASS],
        failed=outcomes[pb.OUTCOME_FAIL],
        abstained=outcomes[pb.OUTCOME_ABSTAIN],
        total_cost_usd=sum(result.total_cost_usd for result in results),
        criteria=total.criteria,
        criteria_accepted=total.criteria_accepted,
        tiers=total.tiers,
    )


def pending_cases(summary: api_pb2.Summary) -> int:
    return summary.cases - summary.passed - summary.failed - summary.abstained


def reviewed_criteria(results: Iterable[pb.Result]) -> int:
    return sum(
        1
        for result in results
        for criterion in result.criteria
        if any(a.method == REVIEW_METHOD for a in criterion.history)
    )


def deciding_tier_cost(results: Iterable[pb.Result]) -> float:
    """What charging only the last tier that ran would report (understated, for contrast)."""
    total = 0.0
    for result in results:
        for criterion in result.criteria:
            attempts = machine_attempts(criterion)
            if attempts and left_cascade(criterion):
                total += attempts[-1].cost_usd
    return total
