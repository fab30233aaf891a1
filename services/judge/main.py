"""Wiring of one judge tier: its model, the calibration store, thresholds, the router."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence

from faststream.asgi import AsgiFastStream

from reag.calibration.store import CalibrationStore
from reag.judging.settings import N_TIERS
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


def settings_from_argv(argv: Sequence[str] | None = None) -> JudgeSettings:
    """The tier's settings: ``--tier N`` from the command line wins over REAG_TIER."""
    parser = argparse.ArgumentParser(
        prog="python -m services.judge",
        description="One tier of the judge cascade (services/judge-tier<N>/tier.yaml).",
    )
    parser.add_argument(
        "--tier",
        type=int,
        choices=range(1, N_TIERS + 1),
        help="this process's place in the cascade; default: REAG_TIER, else 1",
    )
    tier: int | None = parser.parse_args(argv).tier
    return JudgeSettings() if tier is None else JudgeSettings(tier=tier)


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
