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
from reag.calibration.store import CalibrationStore, item_from_review
from reag.labelled.calibrate import LabelledCalibration, calibrate_app
from reag.labelled.clients import build_judges
from reag.labelled.fitting import FitSpec
from reag.llm.client import LLMClient
from reag.v1 import events_pb2 as pb
from services.calibrator.publish import threshold_emits
from services.calibrator.settings import CalibratorSettings
from services.kit.codec import BadEventError
from services.kit.consume import Emit, consume
from services.kit.topology import REVIEWS, SERVICES, THRESHOLDS, suffixed

log = logging.getLogger("reag.calibrator")


@dataclass(frozen=True)
class CalibratorDeps:
    store: CalibrationStore
    clients: Sequence[LLMClient]  # one per tier, cheapest first


def new_labels(store: CalibrationStore, app: str) -> int:
    """Items added since the app was last calibrated (all of them if it never was)."""
    return store.count_items(app, added_after=store.last_calibrated_at(app))


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
        "calibrator: recalibrated %s on %d items (%s): %s",
        app,
        result.calibration.n_items,
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
        app = item.app
        total = await asyncio.to_thread(deps.store.count_items, app)
        metrics.CALIBRATION_ITEMS.labels(app).set(total)
        if not report.added:
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
        return threshold_emits(result.thresholds, THRESHOLDS + suffix)

    return router
