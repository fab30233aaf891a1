"""``reag calibrate --labels FILE`` and the demo's calibration step, whole.

Ingests the labelled items into the calibration store, runs every tier's
judge on what calibration needs (stored scores are reused), fits the
thresholds, records them in the store's history and, with ``publish``, puts
them on reag.thresholds.v1 for the running judges. The run itself is the
core's ``run_calibration`` (the calibrator service calls it too); this is
the shell's part around it: the settings, store and tier clients a command
builds, and publishing, which needs Kafka (the core library never imports it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from reag.calibration.store import CalibrationStore
from reag.calibration_run.calibrate import LabelledCalibration, run_calibration
from reag.calibration_run.clients import make_tier_clients
from reag.calibration_run.fitting import FitSpec
from reag.calibration_run.scoring import Progress
from reag.llm.client import LLMClient
from reag.v1 import events_pb2 as pb
from services.calibrator.publish import publish_thresholds
from services.calibrator.settings import CalibratorSettings


@dataclass(frozen=True, slots=True)
class LabelsRun:
    result: LabelledCalibration
    published: int


async def calibrate_from_labels(
    path: Path,
    spec: FitSpec,
    *,
    app: str | None = None,
    tier_models: str | None = None,
    publish: bool = False,
    clients: Sequence[LLMClient] | None = None,
    store: CalibrationStore | None = None,
    progress: Progress | None = None,
    stored_scores: Path | None = None,
    caller: str = "cli",
) -> LabelsRun:
    """Calibrate ``app`` on the labelled file ``path`` as ``spec`` asks; publish if told to.

    ``tier_models`` ("m1,m2,m3") overrides REAG_TIER_MODELS for this run; Kafka, the
    topic suffix and the store come from the usual REAG_* settings. Tier clients made
    here (``caller`` is whom their calls are charged to) are closed here.
    """
    settings = (
        CalibratorSettings(tier_models=tier_models)
        if tier_models is not None
        else CalibratorSettings()
    )
    calibration = store or CalibrationStore.open(settings.resolved_store_dsn())
    tier_clients = list(clients) if clients is not None else make_tier_clients(settings, caller)
    try:
        result = await run_calibration(
            calibration,
            tier_clients,
            settings,
            spec,
            app=app,
            labels=path,
            stored_scores=stored_scores,
            progress=progress,
        )
    finally:
        if clients is None:
            for client in tier_clients:
                await client.aclose()
    published = 0
    if publish:
        published = await publish_thresholds(
            settings.kafka, result.thresholds, topic_suffix=settings.topic_suffix
        )
    return LabelsRun(result, published)


async def borrow_thresholds_for(
    app: str, lender: str, *, publish: bool = False, store: CalibrationStore | None = None
) -> tuple[list[pb.Threshold], int]:
    """Give ``app`` the thresholds of ``lender``, provisional (``reag.recalibration.day_one``);
    record them and, if told to, publish them. No model call: the lender's fit is reused."""
    import asyncio

    from reag.recalibration.day_one import borrow_thresholds

    settings = CalibratorSettings()
    calibration = store or CalibrationStore.open(settings.resolved_store_dsn())
    borrowed = await asyncio.to_thread(borrow_thresholds, calibration, app, lender)
    published = 0
    if publish:
        published = await publish_thresholds(
            settings.kafka, borrowed, topic_suffix=settings.topic_suffix
        )
    return borrowed, published
