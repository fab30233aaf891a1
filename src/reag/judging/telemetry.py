"""The judge cascade's Prometheus series (declared in ``reag.metrics``), fed in one place.

Tokens and USD per call are exported by the LLM layer under the caller's tier;
these are the per-criterion figures only a judge knows: its decision, the
verdict mix, confidence, and the cumulative cost of a criterion when it
leaves the cascade (every tier it passed through charged).
"""

from __future__ import annotations

from reag import metrics
from reag.judging.cascade import Step
from reag.judging.guards import slug
from reag.judging.judge import Judgement
from reag.v1 import events_pb2 as pb


def observe_request(app: str, tier: int) -> None:
    metrics.JUDGE_REQUESTS.labels(str(tier), app).inc()


def observe_step(app: str, tier: int, judgement: Judgement, step: Step) -> None:
    t = str(tier)
    metrics.JUDGE_DECISIONS.labels(t, app, step.decision).inc()
    if step.decision == "accepted":
        provisional = step.verdict is not None and step.verdict.provisional
        metrics.JUDGE_VERDICTS.labels(t, app, judgement.verdict, str(provisional).lower()).inc()
    metrics.JUDGE_CONFIDENCE.labels(t).observe(judgement.confidence)
    metrics.JUDGE_COST.labels(t).inc(judgement.cost_usd)
    metrics.JUDGE_LATENCY.labels(t).observe(judgement.latency_s)
    if step.decision not in ("escalated", "audited"):
        metrics.CRITERION_COST.labels(step.decision).observe(step.cumulative_cost_usd)


def observe_guard(app: str, tier: int, step: Step) -> None:
    """A guard abstained before any model call: the decision, and its reason slug."""
    t = str(tier)
    metrics.JUDGE_DECISIONS.labels(t, app, step.decision).inc()
    reason = step.abstain.reason if step.abstain is not None else ""
    metrics.JUDGE_GUARDED.labels(t, app, slug(reason)).inc()
    metrics.CRITERION_COST.labels(step.decision).observe(step.cumulative_cost_usd)


def observe_refusal(app: str, tier: int, *, refused: bool) -> None:
    """1 while the tier refuses the app's threshold as fitted on another judge identity."""
    metrics.JUDGE_THRESHOLD_REFUSED.labels(str(tier), app).set(1.0 if refused else 0.0)


def observe_threshold(app: str, tier: int, threshold: pb.Threshold | None) -> None:
    """Export the λ̂ in force: NaN and present=0 while the tier accepts nothing."""
    t = str(tier)
    present = threshold is not None and threshold.has_threshold
    metrics.JUDGE_THRESHOLD_PRESENT.labels(t, app).set(1.0 if present else 0.0)
    value = threshold.threshold if threshold is not None and present else float("nan")
    metrics.JUDGE_THRESHOLD.labels(t, app).set(value)
    provisional = present and threshold is not None and threshold.provisional
    metrics.JUDGE_THRESHOLD_PROVISIONAL.labels(t, app).set(1.0 if provisional else 0.0)
    withdrawn = threshold is not None and threshold.withdrawn
    metrics.JUDGE_THRESHOLD_WITHDRAWN.labels(t, app).set(1.0 if withdrawn else 0.0)
