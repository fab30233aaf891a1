"""Wiring of one judge tier: its model, the calibration store, thresholds, the router."""

from __future__ import annotations

import asyncio

from faststream.asgi import AsgiFastStream

from reag.calibration.store import CalibrationStore
from reag.llm.client import Caller, LLMClient
from reag.v1 import events_pb2 as pb
from services.judge.handlers import JudgeDeps, announce, apply_threshold, build_router
from services.judge.settings import JudgeSettings
from services.judge.thresholds import read_thresholds
from services.kit.app import make_app
from services.kit.topology import THRESHOLDS


async def load_thresholds(settings: JudgeSettings, deps: JudgeDeps) -> list[pb.Threshold]:
    """Read the thresholds topic whole, apply what is this tier's, and say what is missing."""
    thresholds = await read_thresholds(settings.kafka, THRESHOLDS + settings.topic_suffix)
    for threshold in thresholds:
        apply_threshold(settings, deps, threshold)
    known = await asyncio.to_thread(deps.store.apps) if deps.store is not None else []
    announce(settings, deps, known)
    return thresholds


def create_app(
    settings: JudgeSettings | None = None,
    *,
    client: LLMClient | None = None,
    store: CalibrationStore | None = None,
) -> AsgiFastStream:
    settings = settings or JudgeSettings()
    if client is None:
        from reag.llm.registry import make_client

        client = make_client(settings.model(), caller=Caller("judge", str(settings.tier)))
    calibration = store or CalibrationStore.open(settings.resolved_store_dsn())
    deps = JudgeDeps.build(settings, client, calibration)

    async def start() -> None:
        await load_thresholds(settings, deps)

    return make_app(
        settings.service,
        settings,
        [build_router(settings, deps)],
        on_startup=[start],
        on_shutdown=[client.aclose],
    )
