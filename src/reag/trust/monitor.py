"""The trust report of one app: per tier and for the whole accepted set, from its audits.

An audit is a criterion picked at random before any tier decided, scored by
every tier and labelled by a reviewer (``reag.trust.audit``). Under the
thresholds in force, each audit has one deciding tier: the first whose
threshold accepts its confidence (cascade routing). The disagreements among
the audits a tier decides estimate that tier's risk on live traffic, the
exact quantity cascade-mode calibration promised to keep ≤ α; among the
audits any tier decides, the whole accepted set's.

An epoch is the life of one set of thresholds: only audits labelled after the
thresholds were computed count, because earlier audits may have been used to
fit them. States, per tier and for ``all``:

- ``insufficient``: the audits cannot yet say the risk is ≤ α, nor that it is
  above (the confidence sequence still straddles α, or there are none);
- ``within``: the anytime-valid upper bound is ≤ α: audits confirm the promise;
- ``exceeded``: the change detector has shown the risk above α. The bound then
  reported is the upper bound on the audits since the change it points to,
  and never below α (the alarm has just shown the risk is above it).

So the alert "bound > α while not insufficient" fires exactly in
``exceeded``, with a false-alarm probability ≤ δ over the whole epoch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from reag.judging.decision import accepts
from reag.trust.drift import DRIFT_KINDS, DriftCheck, DriftKind, scheduled_checks
from reag.trust.sequence import ChangeDetector, change_point, upper_bound
from reag.v1 import events_pb2 as pb

State = Literal["insufficient", "within", "exceeded"]
ALL = "all"


@dataclass(frozen=True, slots=True)
class TierScore:
    """One tier's opinion of one item: its verdict and raw confidence."""

    tier: int
    verdict: str  # "YES" / "NO"
    confidence: float


@dataclass(frozen=True, slots=True)
class LabelledScores:
    """An item with every tier's score, its expert label, and what drift compares."""

    item_id: str
    label: str  # the expert's, "YES" / "NO"
    persona_category: str
    criterion_type: str  # "pass" / "fail"
    scores: tuple[TierScore, ...]

    def score(self, tier: int) -> TierScore | None:
        return next((s for s in self.scores if s.tier == tier), None)


def deciding_tier(
    item: LabelledScores, thresholds: Mapping[int, pb.Threshold], n_tiers: int
) -> int | None:
    """The first tier whose threshold accepts the item's confidence; None: it would abstain."""
    for tier in range(1, n_tiers + 1):
        score = item.score(tier)
        if score is None:
            return None
        if accepts(score.confidence, thresholds.get(tier)):
            return tier
    return None


def reaches(
    item: LabelledScores, tier: int, thresholds: Mapping[int, pb.Threshold], n_tiers: int
) -> bool:
    """Whether cascade routing brings the item to ``tier`` (no lower tier accepts it)."""
    decided = deciding_tier(item, thresholds, min(tier - 1, n_tiers))
    return decided is None and item.score(tier) is not None


@dataclass(frozen=True, slots=True)
class RiskReport:
    """The live risk of one tier (or ``all``) in the current epoch."""

    tier: str
    alpha: float
    delta: float
    audits: int  # audits this tier decided
    disagreements: int
    bound: float
    state: State
    detector: float  # the e-detector's statistic; the alarm is at 1/δ
    alarmed_at: int | None  # the audit (1-based, within this tier's) that raised it

    @property
    def insufficient(self) -> bool:
        return self.state == "insufficient"

    @property
    def risk(self) -> float:
        return self.disagreements / self.audits if self.audits else math.nan


def risk_report(tier: str, disagreed: Sequence[bool], alpha: float, delta: float) -> RiskReport:
    """Bound, detector and state from one tier's audit outcomes, oldest first."""
    detector = ChangeDetector(alpha, delta)
    for d in disagreed:
        detector.update(d)
    n, k = len(disagreed), sum(disagreed)
    bound = upper_bound(k, n, delta)
    if detector.alarmed:
        start = change_point(list(disagreed), alpha)
        recent = disagreed[start:]
        bound = max(upper_bound(sum(recent), len(recent), delta), math.nextafter(alpha, 1.0))
        state: State = "exceeded"
    elif n > 0 and bound <= alpha:
        state = "within"
    else:
        state = "insufficient"
    return RiskReport(
        tier, alpha, delta, n, k, bound, state, detector.statistic, detector.alarmed_at
    )


@dataclass(frozen=True, slots=True)
class TierDrift:
    tier: int
    live: int  # audits that reach this tier
    calibration: int  # calibration items that reach it
    checks: dict[DriftKind, list[DriftCheck]] = field(default_factory=dict)

    def alarmed(self, kind: DriftKind) -> bool:
        return any(c.alarmed for c in self.checks.get(kind, []))

    def last(self, kind: DriftKind) -> DriftCheck | None:
        done = self.checks.get(kind, [])
        return done[-1] if done else None


def tier_drift(
    tier: int,
    calibration: Sequence[LabelledScores],
    audits: Sequence[LabelledScores],
    thresholds: Mapping[int, pb.Threshold],
    *,
    n_tiers: int,
    delta: float,
) -> TierDrift:
    ref = [i for i in calibration if reaches(i, tier, thresholds, n_tiers)]
    live = [i for i in audits if reaches(i, tier, thresholds, n_tiers)]

    def values(items: Sequence[LabelledScores], kind: DriftKind) -> list[float] | list[str]:
        if kind == "confidence":
            return [s.confidence for i in items if (s := i.score(tier)) is not None]
        if kind == "persona":
            return [i.persona_category for i in items]
        return [i.criterion_type for i in items]

    checks = {
        kind: scheduled_checks(kind, values(ref, kind), values(live, kind), delta)
        for kind in DRIFT_KINDS
    }
    return TierDrift(tier, len(live), len(ref), checks)


@dataclass(frozen=True, slots=True)
class TrustReport:
    """Everything ``reag trust`` shows and the gauges export for one app."""

    app: str
    n_tiers: int
    audits: int  # audits in this epoch
    abstained: int  # audits no tier would accept
    risks: dict[str, RiskReport]  # "1".."n" and "all"
    drift: dict[int, TierDrift]
    epoch_started: str = ""  # ISO time the thresholds in force were computed
    reviewed_abstentions: int = 0  # reported; never in the risk estimate
    calibration_items: int = 0  # exchangeable labelled items the thresholds were fit on


def trust_report(
    app: str,
    audits: Sequence[LabelledScores],
    calibration: Sequence[LabelledScores],
    thresholds: Mapping[int, pb.Threshold],
    n_tiers: int,
    *,
    alpha: float,
    delta: float,
) -> TrustReport:
    """Audits oldest first, all from the current epoch; calibration items carry their scores."""
    by_tier: dict[str, list[bool]] = {str(t): [] for t in range(1, n_tiers + 1)}
    by_tier[ALL] = []
    abstained = 0
    for item in audits:
        tier = deciding_tier(item, thresholds, n_tiers)
        if tier is None:
            abstained += 1
            continue
        score = item.score(tier)
        assert score is not None
        wrong = score.verdict != item.label
        by_tier[str(tier)].append(wrong)
        by_tier[ALL].append(wrong)
    risks = {name: risk_report(name, seq, alpha, delta) for name, seq in by_tier.items()}
    drift = {
        t: tier_drift(t, calibration, audits, thresholds, n_tiers=n_tiers, delta=delta)
        for t in range(1, n_tiers + 1)
    }
    return TrustReport(app, n_tiers, len(audits), abstained, risks, drift)
