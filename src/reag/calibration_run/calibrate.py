"""One calibration of one app: score what is missing, fit every tier, record the thresholds.

``run_calibration`` is the one run: the calibrator service calls it on the
items already in the store (reviews add them); ``reag calibrate --labels``
and the demo call it with a labelled file, whose items it adds first.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from reag import metrics
from reag.calibration.cascade import CascadeCalibration
from reag.calibration.errors import CalibrationError
from reag.calibration.scores import ScoreRecord
from reag.calibration.store import EXCHANGEABLE, CalibrationStore
from reag.calibration_run.clients import build_judges
from reag.calibration_run.files import ingest_labelled
from reag.calibration_run.fitting import FitSpec, thresholds_from
from reag.calibration_run.scoring import Progress, ScoringStats, score_for_calibration
from reag.calibration_run.snapshot import SnapshotReport, import_snapshot
from reag.judging.judge import TierJudge
from reag.judging.settings import CascadeSettings
from reag.llm.client import LLMClient
from reag.v1 import events_pb2 as pb


@dataclass(frozen=True, slots=True)
class LabelledCalibration:
    """A finished calibration of one app: its fit, its thresholds, what scoring cost."""

    app: str
    calibration: CascadeCalibration
    thresholds: list[pb.Threshold]
    records: list[ScoreRecord]
    models: tuple[str, ...]
    prompt_version: str
    stats: ScoringStats
    snapshots: tuple[SnapshotReport, ...] = ()
    annotators: tuple[int, ...] = ()  # N per tier
    # Reviewed abstentions in the store, left out of the fit (not exchangeable with traffic).
    reviewed_abstentions: int = 0

    def model_note(self) -> str:
        """Says plainly when the tiers are one judge twice: then escalation adds nothing."""
        judges = list(zip(self.models, self.annotators or (0,) * len(self.models), strict=True))
        if len(judges) == 1:
            return f"one tier, {self.models[0]}: what it cannot accept goes to review"
        if len(set(judges)) == 1:
            return (
                f"all {len(self.models)} tiers run the same judge, {self.models[0]}: "
                "escalation asks it again. Name different models per tier with "
                "REAG_TIER_MODELS (cheapest first), or more annotators (REAG_TIER_ANNOTATORS)."
            )
        return "tiers: " + " → ".join(f"{m} N={n}" if n else m for m, n in judges)


async def calibrate_app(
    store: CalibrationStore,
    app: str,
    judges: Sequence[TierJudge],
    spec: FitSpec,
    *,
    trigger: str = "cli",
    score_all: bool = False,
    progress: Progress | None = None,
    record: bool = True,
) -> LabelledCalibration:
    """Score what is missing, fit every tier, and record the thresholds in the history
    (``record`` False: the caller records them if it keeps them)."""
    # Only exchangeable labels enter the risk estimate: the labelled set and audits.
    # Reviewed abstentions stay in the store for the annotators' examples (reported).
    items = await asyncio.to_thread(store.items, app, sources=EXCHANGEABLE)
    left_out = await asyncio.to_thread(store.count_items, app) - len(items)
    if not items:
        raise CalibrationError(
            f"the calibration store has no exchangeable labelled items for app {app!r} "
            f"({left_out} reviewed abstentions, which never enter the risk estimate); add "
            "some with `reag calibrate --labels FILE` or through audits (REAG_AUDIT_RATE)"
        )
    stats = ScoringStats()
    records = await score_for_calibration(
        store, judges, app, items, spec, score_all=score_all, stats=stats, progress=progress
    )
    calibration = spec.fit(records, len(judges), depth=len(judges))
    models = tuple(j.model for j in judges)
    thresholds = thresholds_from(calibration, app, judges)
    version = judges[0].prompt_version if judges else ""
    if record:
        await asyncio.to_thread(
            store.record_thresholds, thresholds, prompt_version=version, trigger=trigger
        )
    metrics.CALIBRATION_RUNS.labels(trigger).inc()
    annotators = tuple(j.config.n_annotators for j in judges)
    return LabelledCalibration(
        app,
        calibration,
        thresholds,
        records,
        models,
        version,
        stats,
        annotators=annotators,
        reviewed_abstentions=left_out,
    )


async def run_calibration(
    store: CalibrationStore,
    clients: Sequence[LLMClient],
    settings: CascadeSettings,
    spec: FitSpec,
    *,
    app: str | None = None,
    labels: Path | None = None,
    stored_scores: Path | None = None,
    trigger: str = "cli",
    score_all: bool = False,
    progress: Progress | None = None,
    record: bool = True,
) -> LabelledCalibration:
    """The one calibration run: ``reag calibrate --labels``, the demo and the calibrator.

    ``labels``: a labelled file whose items (of ``app``, or its only app) join the
    store first, as ``reag calibrate --labels`` and the demo do; without it the app's
    items already in the store are calibrated on (the calibrator, after reviews).
    The judges are built as the live ones are (``clients``, one per tier, and the
    cascade ``settings``), then ``calibrate_app`` scores what is missing and fits.

    ``stored_scores``: a folder of judge scores made beforehand on this set; each tier's
    file is imported only after a random sample judged again matches it
    (``reag.calibration_run.snapshot``), and what it holds is then not scored again.
    """
    chosen = app
    if labels is not None:
        chosen, _ = await ingest_labelled(store, labels, app)
    if chosen is None:
        raise CalibrationError("a calibration run needs an app or a labelled file")
    judges = await asyncio.to_thread(build_judges, store, chosen, clients, settings)
    reports: list[SnapshotReport] = []
    if stored_scores is not None:
        in_store = await asyncio.to_thread(store.items, chosen)
        for judge in judges:
            report = await import_snapshot(store, chosen, judge, in_store, stored_scores)
            if report is not None:
                reports.append(report)
    result = await calibrate_app(
        store,
        chosen,
        judges,
        spec,
        trigger=trigger,
        score_all=score_all,
        progress=progress,
        record=record,
    )
    return dataclasses.replace(result, snapshots=tuple(reports))
