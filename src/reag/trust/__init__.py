"""Trust in production: random audits, live risk bounds, drift alarms (no Kafka here).

Calibration promises that accepted verdicts disagree with experts at most α
of the time, with probability 1−δ, as long as live traffic is exchangeable
with the calibration set. This package checks that promise after
deployment, from a uniform random sample of criteria that every tier scores
and a person labels (``audit``): an anytime-valid upper bound on the live
risk and a change detector (``sequence``), drift tests against the
calibration set on a declared schedule (``drift``), and the per-tier report
that the calibrator exports as gauges and ``reag trust`` prints (``monitor``),
and the day-one lifecycle of a threshold borrowed from other apps, certified or
withdrawn by the new app's own audits (``provisional``).
"""

from reag.trust.audit import DEFAULT_AUDIT_RATE, audit_draw, is_audit
from reag.trust.drift import DRIFT_KINDS, DriftCheck, DriftKind, criterion_type, look_schedule
from reag.trust.monitor import (
    ALL,
    LabelledScores,
    RiskReport,
    TierDrift,
    TierScore,
    TrustReport,
    deciding_tier,
    risk_report,
    trust_report,
)
from reag.trust.provisional import (
    ProvisionalStanding,
    Standing,
    labels_to_certify,
    least_abstention,
    standing,
)
from reag.trust.sequence import (
    ChangeDetector,
    audits_needed,
    detector_statistics,
    upper_bound,
)

__all__ = [
    "ALL",
    "DEFAULT_AUDIT_RATE",
    "DRIFT_KINDS",
    "ChangeDetector",
    "DriftCheck",
    "DriftKind",
    "LabelledScores",
    "ProvisionalStanding",
    "RiskReport",
    "Standing",
    "TierDrift",
    "TierScore",
    "TrustReport",
    "audit_draw",
    "audits_needed",
    "criterion_type",
    "deciding_tier",
    "detector_statistics",
    "is_audit",
    "labels_to_certify",
    "least_abstention",
    "look_schedule",
    "risk_report",
    "standing",
    "trust_report",
    "upper_bound",
]
