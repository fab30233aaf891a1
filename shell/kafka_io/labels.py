"""``reag calibrate --labels FILE [--app A] [--tier-models M1,M2,M3] [--publish]``, whole.

Ingests the labelled items into the calibration store, runs every tier's
judge on what calibration needs (stored scores are reused), fits the
thresholds, records them in the store's history and, with ``publish``, puts
them on reag.thresholds.v1 for the running judges. It is the shell's, not
the calibrator service's: a command runs it once, and publishing needs
Kafka, which the core library never imports.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from reag.calibration.cascade import Mode
from reag.calibration.fixed_sequence import DEFAULT_GRID, DEFAULT_MIN_ACCEPTED, Grid
from reag.calibration.scaling import DEFAULT_TAU
from reag.calibration.store import CalibrationStore
from reag.labelled.calibrate import LabelledCalibration, ingest_and_calibrate
from reag.labelled.clients import make_tier_clients
from reag.labelled.fitting import FitSpec
from reag.labelled.scoring import Progress
from reag.llm.client import LLMClient
from services.calibrator.publish import publish_thresholds
from services.calibrator.settings import CalibratorSettings


@dataclass(frozen=True, slots=True)
class LabelsRun:
    result: LabelledCalibration
    published: int


def calibrate_from_labels(
    path: Path,
    *,
    alpha: float,
    delta: float,
    mode: Mode = "cascade",
    tau: int = DEFAULT_TAU,
    grid: Grid = DEFAULT_GRID,
    min_accepted: int = DEFAULT_MIN_ACCEPTED,
    app: str | None = None,
    tier_models: str | None = None,
    publish: bool = False,
    clients: Sequence[LLMClient] | None = None,
    store: CalibrationStore | None = None,
    progress: Progress | None = None,
    stored_scores: Path | None = None,
) -> LabelsRun:
    """``tier_models`` ("m1,m2,m3") overrides REAG_TIER_MODELS for this run; Kafka and
    the store come from the usual REAG_* settings."""
    settings = (
        CalibratorSettings(tier_models=tier_models)
        if tier_models is not None
        else CalibratorSettings()
    )
    calibration = store or CalibrationStore.open(settings.resolved_store_dsn())
    tier_clients = list(clients) if clients is not None else make_tier_clients(settings, "cli")

    async def run() -> LabelsRun:
        result = await ingest_and_calibrate(
            path,
            calibration,
            tier_clients,
            settings,
            FitSpec(
                alpha=alpha,
                delta=delta,
                mode=mode,
                tau=tau,
                grid=grid,
                min_accepted=min_accepted,
            ),
            app=app,
            progress=progress,
            stored_scores=stored_scores,
        )
        published = 0
        if publish:
            published = await publish_thresholds(
                settings.kafka, result.thresholds, topic_suffix=settings.topic_suffix
            )
        return LabelsRun(result, published)

    return asyncio.run(run())
