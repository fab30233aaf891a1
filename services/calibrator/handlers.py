"""The calibrator's handler: a reviewed criterion joins the calibration set; every M new
labels the app is recalibrated and the thresholds go out for the judges to pick up live.

Recalibration scores only (tier, item) pairs the store lacks, with the same
prompts the judges use, so its cost grows with the new labels, not the set.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from faststream.kafka import KafkaRouter

from reag import metrics
from reag.calibration.store import EXCHANGEABLE, CalibrationStore, item_from_review
from reag.labelled.calibrate import LabelledCalibration, calibrate_app
from reag.labelled.clients import build_judges
from reag.labelled.fitting import FitSpec
from reag.llm.client import LLMClient
from reag.trust.from_store import app_report, thresholds_in_force
from reag.trust.monitor import ALL, TrustReport, deciding_tier
from reag.trust.store import AuditStore, audit_from_review
from reag.trust.telemetry import count_audit, observe_report
from reag.v1 import events_pb2 as pb
from services.calibrator.publish import threshold_emits
from services.calibrator.settings import CalibratorSettings
from services.kit.codec import BadEventError
from services.kit.delivery import Emit, consume
from services.kit.topology import REVIEWS, SERVICES, THRESHOLDS, suffixed

log = logging.getLogger("reag.calibrator")


@dataclass(frozen=True)
class CalibratorDeps:
    store: CalibrationStore
    clients: Sequence[LLMClient]  # one per tier, cheapest first

    @property
    def audits(self) -> AuditStore:
        return AuditStore(self.store.sessions)


def watch_trust(settings: CalibratorSettings, deps: CalibratorDeps, app: str) -> TrustReport:
    """Recompute the app's live risk bounds and drift tests and export them as gauges."""
    report = app_report(
        deps.store,
        deps.audits,
        app,
        alpha=settings.alpha,
        delta=settings.delta,
        n_tiers=len(deps.clients),
    )
    observe_report(report)
    whole = report.risks[ALL]
    log.info(
        "calibrator: trust %s: %d audits this epoch, whole accepted set %d/%d disagree, "
        "bound %.3f vs α %.3f: %s",
        app,
        report.audits,
        whole.disagreements,
        whole.audits,
        whole.bound,
        whole.alpha,
        whole.state,
    )
    return report


def record_audit(settings: CalibratorSettings, deps: CalibratorDeps, review: pb.Review) -> None:
    """Keep a labelled audit with every tier's score, count it, and refresh the gauges."""
    audit = audit_from_review(review)
    if audit is None:
        return
    app = review.meta.app or review.item.meta.app
    if not deps.audits.add(app, audit):
        return
    thresholds = thresholds_in_force(deps.store, app)
    count_audit(app, deciding_tier(audit, thresholds, max(thresholds, default=0)))
    watch_trust(settings, deps, app)


def new_labels(store: CalibrationStore, app: str) -> int:
    """Exchangeable items added since the app was last calibrated (all, if it never was).

    A reviewed abstention does not count: it never enters the fit, so it cannot change it.
    """
    return store.count_items(app, added_after=store.last_calibrated_at(app), sources=EXCHANGEABLE)


async def recalibrate(
    settings: CalibratorSettings, deps: CalibratorDeps, app: str, *, trigger: str = "reviews"
) -> LabelledCalibration:
    judges = await asyncio.to_thread(build_judges, deps.store, app, deps.clients, settings)
    result = await calibrate_app(
        deps.store,
        app,
        judges,
        FitSpec(
            alpha=settings.alpha,
            delta=settings.delta,
            mode=settings.mode,
            tau=settings.tau,
            grid=settings.candidate_grid(),
            min_accepted=settings.min_accepted,
        ),
        trigger=trigger,
    )
    log.info(
        "calibrator: recalibrated %s on %d exchangeable items, %d reviewed abstentions left "
        "out (%s): %s",
        app,
        result.calibration.n_items,
        result.reviewed_abstentions,
        result.stats.line(),
        "; ".join(
            f"tier {t.tier} " + (f"λ̂={t.threshold:.3f}" if t.has_threshold else "none")
            for t in result.thresholds
        ),
    )
    return result


def build_router(settings: CalibratorSettings, deps: CalibratorDeps) -> KafkaRouter:
    suffix = settings.topic_suffix
    spec = suffixed(SERVICES["calibrator"], suffix)
    router = KafkaRouter()

    @consume(
        router,
        spec,
        REVIEWS + suffix,
        pb.Review,
        max_event_bytes=settings.kafka.max_event_bytes,
        delivery=settings.delivery,
        group_id=f"{spec.name}{suffix}",
    )
    async def learn_from_review(review: pb.Review) -> list[Emit] | None:
        if not review.HasField("item") or not review.item.criterion.text:
            raise BadEventError(
                "missing_field",
                "Review lacks item (the reviewed JudgeRequest with its criterion), so it "
                "cannot join the calibration set; review tools must send what was reviewed",
            )
        item = item_from_review(review)
        report = await asyncio.to_thread(deps.store.add_items, [item])
        await asyncio.to_thread(record_audit, settings, deps, review)
        app = item.app
        total = await asyncio.to_thread(deps.store.count_items, app)
        metrics.CALIBRATION_ITEMS.labels(app).set(total)
        if not report.added:
            return None
        if item.source == "review":
            log.info(
                "calibrator: %s reviewed abstention %s joins the annotators' example pool, "
                "not the risk estimate (not exchangeable with traffic)",
                app,
                item.item_id,
            )
            return None
        due = await asyncio.to_thread(new_labels, deps.store, app)
        if due < settings.recalibrate_every:
            log.info(
                "calibrator: %s labelled %s (%d/%d new labels before recalibrating)",
                app,
                item.item_id,
                due,
                settings.recalibrate_every,
            )
            return None
        result = await recalibrate(settings, deps, app)
        await asyncio.to_thread(watch_trust, settings, deps, app)  # a new epoch begins
        return threshold_emits(result.thresholds, THRESHOLDS + suffix)

    return router
