"""Run-level figures from stored results: outcome counts, coverage, per-tier traffic, cost.

Cost is honest (docs/architecture.md, "Honest cost"): a criterion that reached
tier 3 is charged for tiers 1, 2 and 3, because every tier that ran appears in
its history. ``deciding_tier_cost`` is computed beside it only to show how much
the paper's accounting (charging the deciding tier alone) would understate.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

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
class _Tier:
    requests: int = 0
    accepted: int = 0
    escalated: int = 0
    abstained: int = 0
    cost_usd: float = 0.0


def _tiers(results: Iterable[pb.Result]) -> dict[int, _Tier]:
    tiers: dict[int, _Tier] = {}
    for result in results:
        for criterion in result.criteria:
            if not left_cascade(criterion):
                continue
            attempts = machine_attempts(criterion)
            for position, attempt in enumerate(attempts):
                tier = tiers.setdefault(attempt.tier, _Tier())
                tier.requests += 1
                tier.cost_usd += attempt.cost_usd
                if position < len(attempts) - 1:
                    tier.escalated += 1
                elif criterion.accepted:
                    tier.accepted += 1
                else:
                    tier.abstained += 1
    return tiers


def summarize(results: Sequence[pb.Result]) -> api_pb2.Summary:
    """``criteria`` counts criteria that left the cascade (accepted or abstained): coverage
    is the share of those a judge accepted, the paper's selection coverage."""
    summary = api_pb2.Summary(cases=len(results))
    for result in results:
        if result.outcome == pb.OUTCOME_PASS:
            summary.passed += 1
        elif result.outcome == pb.OUTCOME_FAIL:
            summary.failed += 1
        elif result.outcome == pb.OUTCOME_ABSTAIN:
            summary.abstained += 1
        summary.total_cost_usd += result.total_cost_usd
        for criterion in result.criteria:
            if left_cascade(criterion):
                summary.criteria += 1
                summary.criteria_accepted += int(criterion.accepted)
    summary.coverage = summary.criteria_accepted / summary.criteria if summary.criteria else 0.0
    for number, tier in sorted(_tiers(results).items()):
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
