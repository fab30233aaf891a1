"""Wiring of the calibrator: tier clients, the calibration store, the router, and the
republishing of the latest stored thresholds at start."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from faststream.asgi import AsgiFastStream

from reag.calibration.store import CalibrationStore
from reag.labelled.clients import make_tier_clients
from reag.llm.client import LLMClient
from services.calibrator.handlers import CalibratorDeps, build_router
from services.calibrator.publish import publish_thresholds
from services.calibrator.settings import CalibratorSettings
from services.kit.app import make_app

log = logging.getLogger("reag.calibrator")


async def republish_latest(settings: CalibratorSettings, store: CalibrationStore) -> int:
    """Publish the newest stored threshold of every (app, tier): a restarted embedded
    broker has none, and judges must not fall back to accepting nothing."""
    latest = await asyncio.to_thread(store.latest_thresholds)
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
    deps = CalibratorDeps(calibration, tier_clients)

    async def start() -> None:
        await republish_latest(settings, calibration)

    async def stop() -> None:
        for client in tier_clients:
            await client.aclose()

    return make_app(
        "calibrator",
        settings,
        [build_router(settings, deps)],
        after_startup=[start],
        on_shutdown=[stop],
    )
