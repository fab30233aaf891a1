"""The trust gauges (declared in ``reag.metrics``), set from one report in one place."""

from __future__ import annotations

from reag import metrics
from reag.trust.drift import DRIFT_KINDS
from reag.trust.monitor import TrustReport


def observe_report(report: TrustReport) -> None:
    """Export every tier's bound, α, state and drift alarms for the report's app."""
    app = report.app
    for tier, risk in report.risks.items():
        metrics.TRUST_RISK_BOUND.labels(app, tier).set(risk.bound)
        metrics.TRUST_ALPHA.labels(app, tier).set(risk.alpha)
        metrics.TRUST_INSUFFICIENT.labels(app, tier).set(1.0 if risk.insufficient else 0.0)
    for number, drift in report.drift.items():
        for kind in DRIFT_KINDS:
            alarmed = 1.0 if drift.alarmed(kind) else 0.0
            metrics.TRUST_DRIFT_ALARM.labels(app, str(number), kind).set(alarmed)


def count_audit(app: str, tier: int | None) -> None:
    """One more labelled audit, under the tier that decided it (``none``: all would abstain)."""
    metrics.AUDITS.labels(app, str(tier) if tier is not None else "none").inc()
