"""The trust report of one app, read from the SQL store: what the gauges and ``reag trust`` show.

The epoch is the thresholds in force (the newest calibration of the app):
only audits labelled after they were computed count. The calibration side of
the drift tests is the exchangeable items those thresholds were fit on, with
the scores the fit used (same model and prompt version as the threshold).
"""

from __future__ import annotations

from datetime import UTC, datetime

from reag.calibration.store import EXCHANGEABLE, CalibrationStore
from reag.trust.drift import criterion_type
from reag.trust.monitor import LabelledScores, TierScore, TrustReport, trust_report
from reag.trust.store import AuditStore
from reag.v1 import events_pb2 as pb


def thresholds_in_force(store: CalibrationStore, app: str) -> dict[int, pb.Threshold]:
    """The newest calibration's thresholds, by tier (one calibration publishes every tier)."""
    latest = store.latest_thresholds(app)
    if not latest:
        return {}
    newest = max(t.computed_at.ToNanoseconds() for t in latest)
    return {t.tier: t for t in latest if t.computed_at.ToNanoseconds() == newest}


def promised_delta(thresholds: dict[int, pb.Threshold], fallback: float) -> float:
    """The δ the thresholds in force promise for the whole accepted set: each tier's own,
    or under system mode the tiers' δ added back up (each was tested at δ / tiers)."""
    first = next(iter(thresholds.values()))
    tier_delta = first.delta or fallback
    return min(tier_delta * len(thresholds), 0.5) if first.mode == "system" else tier_delta


def calibration_scores(
    store: CalibrationStore, app: str, thresholds: dict[int, pb.Threshold], exclude: set[str]
) -> list[LabelledScores]:
    """The exchangeable calibration items with every score the fit had, tier by tier."""
    versions = store.threshold_prompt_versions(app)
    by_tier = {
        tier: store.scores(app, tier, t.model, versions.get(tier, t.prompt_version))
        for tier, t in thresholds.items()
    }
    out = []
    for item in store.items(app, sources=EXCHANGEABLE):
        if item.item_id in exclude:
            continue
        scores = tuple(
            TierScore(tier, s.verdict, s.confidence)
            for tier in sorted(by_tier)
            if (s := by_tier[tier].get(item.item_id)) is not None
        )
        if scores:
            out.append(
                LabelledScores(
                    item.item_id,
                    item.label,
                    item.persona_category,
                    criterion_type(item.request.criterion.text),
                    scores,
                )
            )
    return out


def app_report(
    store: CalibrationStore,
    audits: AuditStore,
    app: str,
    *,
    alpha: float,
    delta: float,
    n_tiers: int = 1,
) -> TrustReport:
    """The app's report under its thresholds in force; ``alpha``/``delta`` are used only
    when the app has no thresholds yet (otherwise the thresholds' own promise is checked)."""
    thresholds = thresholds_in_force(store, app)
    after: datetime | None = None
    if thresholds:
        first = next(iter(thresholds.values()))
        alpha = first.alpha or alpha
        delta = promised_delta(thresholds, delta)
        n_tiers = max(thresholds)
        after = first.computed_at.ToDatetime(tzinfo=UTC)
    live = audits.audits(app, after=after)
    reference = calibration_scores(store, app, thresholds, {a.item_id for a in live})
    report = trust_report(app, live, reference, thresholds, n_tiers, alpha=alpha, delta=delta)
    return TrustReport(
        report.app,
        report.n_tiers,
        report.audits,
        report.abstained,
        report.risks,
        report.drift,
        epoch_started=after.isoformat() if after is not None else "",
        reviewed_abstentions=store.count_items(app, sources=("review",)),
        calibration_items=len(reference),
    )
