"""Wiring of the calibrator: tier clients, the calibration store, the ``Recalibrator``, the
router, and the republishing of the latest stored thresholds at start."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from faststream.asgi import AsgiFastStream

from reag.calibration.store import CalibrationStore
from reag.calibration_run.clients import make_tier_clients
from reag.llm.client import LLMClient
from reag.recalibration import Recalibrator
from services.calibrator.handlers import build_router
from services.calibrator.publish import publish_thresholds
from services.calibrator.settings import CalibratorSettings
from services.kit.app import make_app

log = logging.getLogger("reag.calibrator")


def build_recalibrator(
    settings: CalibratorSettings, store: CalibrationStore, clients: Sequence[LLMClient]
) -> Recalibrator:
    """The core object the calibrator runs, on its settings' fit and cadence."""
    return Recalibrator(
        store, clients, settings, settings.fit_spec(), every=settings.recalibrate_every
    )


async def republish_latest(settings: CalibratorSettings, recalibrator: Recalibrator) -> int:
    """Publish the stored thresholds still in force: a restarted embedded broker has none,
    and judges must not fall back to accepting nothing."""
    latest = await asyncio.to_thread(recalibrator.current_thresholds)
    count = await publish_thresholds(settings.kafka, latest, topic_suffix=settings.topic_suffix)
    log.info("calibrator: republished %d stored thresholds", count)
    return count


def create_app(
    settings: CalibratorSettings | None = None,
    *,
    clients: Sequence[LLMClient] | None = None,
    store: CalibrationStore | None = None,
) -> AsgiFastStream:
    settings = settings or CalibratorSettings()
    tier_clients = (
        list(clients) if clients is not None else make_tier_clients(settings, "calibrator")
    )
    calibration = store or CalibrationStore.open(settings.resolved_store_dsn())
    recalibrator = build_recalibrator(settings, calibration, tier_clients)

    async def start() -> None:
        await republish_latest(settings, recalibrator)
        await asyncio.to_thread(recalibrator.watch_all)

    async def stop() -> None:
        for client in tier_clients:
            await client.aclose()

    return make_app(
        "calibrator",
        settings,
        [build_router(settings, recalibrator)],
        after_startup=[start],
        on_shutdown=[stop],
    )
