"""Wiring of the calibrator: tier clients, the calibration store, the router, and the
republishing of the latest stored thresholds at start."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from faststream.asgi import AsgiFastStream

from reag.calibration.store import CalibrationStore
from reag.judging.decision import threshold_key
from reag.judging.identity import refusal
from reag.judging.judge import TierJudge
from reag.labelled.clients import build_judges, make_tier_clients
from reag.llm.client import LLMClient
from reag.v1 import events_pb2 as pb
from services.calibrator.handlers import CalibratorDeps, build_router, watch_trust
from services.calibrator.publish import publish_thresholds
from services.calibrator.settings import CalibratorSettings
from services.kit.app import make_app

log = logging.getLogger("reag.calibrator")


def current_thresholds(
    settings: CalibratorSettings, store: CalibrationStore, clients: Sequence[LLMClient]
) -> list[pb.Threshold]:
    """The newest stored threshold of every (app, tier) that still fits the judge the tier
    runs now; one fitted on another model, prompt, N, K or example set is left out (a judge
    would refuse it anyway) and said in a log line, so nobody mistakes it for in force."""
    fresh: list[pb.Threshold] = []
    judges: dict[str, list[TierJudge]] = {}
    for threshold in store.latest_thresholds():
        if threshold.app not in judges:
            judges[threshold.app] = build_judges(store, threshold.app, clients, settings)
        tiers = judges[threshold.app]
        if not 1 <= threshold.tier <= len(tiers):
            continue
        why = refusal(tiers[threshold.tier - 1], threshold)
        if why is not None:
            log.warning(
                "calibrator: not republishing the stored threshold for %s: %s",
                threshold_key(threshold.app, threshold.tier),
                why,
            )
            continue
        fresh.append(threshold)
    return fresh


async def republish_latest(
    settings: CalibratorSettings, store: CalibrationStore, clients: Sequence[LLMClient]
) -> int:
    """Publish the stored thresholds still in force: a restarted embedded broker has none,
    and judges must not fall back to accepting nothing."""
    latest = await asyncio.to_thread(current_thresholds, settings, store, clients)
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
        await republish_latest(settings, calibration, tier_clients)
        for app in await asyncio.to_thread(deps.audits.apps):
            await asyncio.to_thread(watch_trust, settings, deps, app)

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
