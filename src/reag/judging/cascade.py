"""One step of the cascade (paper 3.4.1): accept, escalate to the next tier, or abstain.

Whatever happens, this tier's attempt is appended to the request's history,
and the cost that travels on is the sum over the whole history: a criterion
that reaches tier 3 has paid for tiers 1, 2 and 3 (the review's point about
the paper's table 3).

An audited criterion (``JudgeRequest.audit``, picked by ``reag.trust.audit``
before tier 1) goes through every tier whatever they decide: the cascade's
verdict still goes out at the tier that accepts it, and the criterion
carries on, so every tier's score is known for it; after the last tier it
goes to review as well. Tiers after the deciding one record "audited".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from reag.judging.decision import accepts
from reag.judging.judge import Judgement, label_to_pb
from reag.v1 import events_pb2 as pb

Decision = Literal["accepted", "escalated", "abstained", "audited"]


@dataclass(frozen=True, slots=True)
class Step:
    """The outcome of one tier on one criterion.

    Exactly one message is set, except for an audit: a verdict can then travel with the
    escalation (or, after the last tier, with the review copy in ``abstain``).
    """

    decision: Decision
    attempt: pb.TierAttempt
    cumulative_cost_usd: float
    verdict: pb.Verdict | None = None
    escalation: pb.JudgeRequest | None = None
    abstain: pb.Abstain | None = None


def tier_attempt(
    tier: int, judgement: Judgement, threshold: pb.Threshold | None, accepted: bool
) -> pb.TierAttempt:
    attempt = pb.TierAttempt(
        tier=tier,
        model=judgement.model,
        verdict=label_to_pb(judgement.verdict),
        confidence=judgement.confidence,
        has_threshold=threshold is not None and threshold.has_threshold,
        cost_usd=judgement.cost_usd,
        prompt_tokens=judgement.usage.prompt_tokens,
        completion_tokens=judgement.usage.completion_tokens,
        latency_s=judgement.latency_s,
        method=judgement.method,
        annotator_yes=list(judgement.p_yes),
        accepted=accepted,
    )
    if threshold is not None and threshold.has_threshold:
        attempt.threshold = threshold.threshold
    return attempt


def _abstain_reason(history: list[pb.TierAttempt]) -> str:
    parts = []
    for a in history:
        if a.has_threshold:
            parts.append(
                f"tier {a.tier} ({a.model}) confidence {a.confidence:.3f} < λ̂ {a.threshold:.3f}"
            )
        else:
            parts.append(f"tier {a.tier} ({a.model}) has no calibrated threshold")
    return "no tier was confident enough: " + "; ".join(parts)


def _verdict(
    request: pb.JudgeRequest,
    judgement: Judgement,
    threshold: pb.Threshold,
    *,
    tier: int,
    history: list[pb.TierAttempt],
    cumulative: float,
) -> pb.Verdict:
    return pb.Verdict(
        meta=request.meta,
        criterion_id=request.criterion.criterion_id,
        oracle_id=request.oracle_id,
        n_criteria=request.n_criteria,
        label=label_to_pb(judgement.verdict),
        tier=tier,
        confidence=judgement.confidence,
        threshold=threshold.threshold,
        history=history,
        cumulative_cost_usd=cumulative,
        criterion=request.criterion,
        evidence=request.evidence,
        audit=request.audit,
        provisional=threshold.provisional,
    )


def next_step(
    request: pb.JudgeRequest,
    judgement: Judgement,
    threshold: pb.Threshold | None,
    *,
    tier: int,
    n_tiers: int,
) -> Step:
    """Decide this tier's outcome and build the message that carries the criterion on."""
    accepted = accepts(judgement.confidence, threshold)
    attempt = tier_attempt(tier, judgement, threshold, accepted)
    history = [*request.history, attempt]
    cumulative = sum(a.cost_usd for a in history)
    decided_before = any(a.accepted for a in request.history)
    verdict = None
    if accepted and not decided_before:
        assert threshold is not None  # accepts() is False without one
        verdict = _verdict(
            request, judgement, threshold, tier=tier, history=history, cumulative=cumulative
        )
    carried = pb.JudgeRequest()
    carried.CopyFrom(request)
    carried.history.append(attempt)
    if request.audit:
        decision: Decision
        if decided_before:
            decision = "audited"
        elif accepted:
            decision = "accepted"
        else:
            decision = "escalated" if tier < n_tiers else "abstained"
        if tier < n_tiers:
            return Step(decision, attempt, cumulative, verdict=verdict, escalation=carried)
        review = pb.Abstain(
            meta=request.meta,
            request=carried,
            reason=(
                "audit: a random criterion every tier scored, for review"
                if any(a.accepted for a in history)
                else "audit; " + _abstain_reason(history)
            ),
            cumulative_cost_usd=cumulative,
            audit=True,
        )
        return Step(decision, attempt, cumulative, verdict=verdict, abstain=review)
    if verdict is not None:
        return Step("accepted", attempt, cumulative, verdict=verdict)
    if tier < n_tiers:
        return Step("escalated", attempt, cumulative, escalation=carried)
    abstain = pb.Abstain(
        meta=request.meta,
        request=carried,
        reason=_abstain_reason(history),
        cumulative_cost_usd=cumulative,
    )
    return Step("abstained", attempt, cumulative, abstain=abstain)


def guarded_step(request: pb.JudgeRequest, *, tier: int, model: str, reason: str) -> Step:
    """Abstain before any model call: a deterministic guard (``reag.judging.guards``) said
    the criterion must not be judged. ``reason`` starts with its ``slug:`` (fixed words
    only). The copy is never an audit: a reviewed label of it would otherwise count as an
    exchangeable (``audit``) calibration label, and these items are not exchangeable."""
    attempt = pb.TierAttempt(tier=tier, model=model, method="guard")
    carried = pb.JudgeRequest()
    carried.CopyFrom(request)
    carried.audit = False
    carried.history.append(attempt)
    cumulative = sum(a.cost_usd for a in carried.history)
    abstain = pb.Abstain(
        meta=request.meta, request=carried, reason=reason, cumulative_cost_usd=cumulative
    )
    return Step("abstained", attempt, cumulative, abstain=abstain)
