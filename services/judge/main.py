"""Wiring of one judge tier: its model, the calibration store, thresholds, the router."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from functools import partial

from faststream.asgi import AsgiFastStream

from reag.calibration.store import CalibrationStore
from reag.judging.settings import N_TIERS
from reag.judging.tier import JudgeTier
from reag.llm.client import Caller, LLMClient
from reag.trust.audit import is_audit
from reag.v1 import events_pb2 as pb
from services.judge.handlers import build_router
from services.judge.settings import JudgeSettings
from services.judge.thresholds import read_thresholds
from services.kit.app import make_app
from services.kit.topology import THRESHOLDS


def build_tier(
    settings: JudgeSettings, client: LLMClient, store: CalibrationStore | None
) -> JudgeTier:
    """The core object this deployment runs: its tier, model, store and audit rate."""
    audit = partial(is_audit, rate=settings.audit_rate)
    provisional = partial(is_audit, rate=settings.provisional_audit_rate)
    return JudgeTier(
        settings, settings.tier, client, store, audit=audit, audit_provisional=provisional
    )


async def load_thresholds(settings: JudgeSettings, tier: JudgeTier) -> list[pb.Threshold]:
    """Read the thresholds topic whole before the first request, and let the tier follow it."""
    topic = THRESHOLDS + settings.topic_suffix
    thresholds = await read_thresholds(settings.kafka, topic)
    await tier.load(thresholds, source=topic)
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
    tier = build_tier(settings, client, calibration)

    async def start() -> None:
        await load_thresholds(settings, tier)

    return make_app(
        settings.service,
        settings,
        [build_router(settings, tier)],
        on_startup=[start],
        on_shutdown=[client.aclose],
    )
