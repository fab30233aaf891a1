"""Fitting the cascade's thresholds from score records, and publishing them as messages.

``FitSpec`` is the one carrier of a fit's parameters, with the defaults of
``reag.fit_defaults``: scoring needs them for its partial fits (which items
reach the next tier) and the run for its final fit, and the two must be the
same fit for the partial ones to be exactly the final fit's first tiers.
``reag calibrate``, the calibrator service and the demo each build one and
hand it to ``reag.calibration_run.calibrate.run_calibration``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp

from reag.calibration.cascade import CascadeCalibration, Mode, calibrate_table
from reag.calibration.fixed_sequence import DEFAULT_GRID, Grid
from reag.calibration.scores import ScoreRecord, pivot
from reag.fit_defaults import DEFAULT_ALPHA, DEFAULT_DELTA, DEFAULT_MIN_ACCEPTED, DEFAULT_TAU
from reag.judging.identity import JudgeIdentity
from reag.judging.judge import TierJudge
from reag.v1 import events_pb2 as pb


@dataclass(frozen=True, slots=True)
class FitSpec:
    """What a fit is asked for: risk α with confidence 1-δ, the mode, τ, the λ grid, and how
    many calibration items a candidate must accept before it is tested (``min_accepted``)."""

    alpha: float = DEFAULT_ALPHA
    delta: float = DEFAULT_DELTA
    mode: Mode = "cascade"
    tau: int = DEFAULT_TAU
    grid: Grid = DEFAULT_GRID
    min_accepted: int = DEFAULT_MIN_ACCEPTED

    def fit(
        self,
        records: Sequence[ScoreRecord],
        n_tiers: int | None = None,
        *,
        depth: int | None = None,
    ) -> CascadeCalibration:
        """Fit tiers 1..n_tiers of a cascade of ``depth`` tiers from the records so far
        (default: every tier the records hold, as the whole cascade).

        Under system mode each tier is tested at δ/depth whatever the number of
        tiers fit so far, so a partial fit's tiers equal the full fit's.
        """
        table = pivot(records, n_tiers=n_tiers)
        tier_delta = self.delta
        if self.mode == "system" and depth is not None:
            tier_delta = self.delta * table.n_tiers / depth
        return calibrate_table(
            table,
            alpha=self.alpha,
            delta=tier_delta,
            mode=self.mode,
            tau=self.tau,
            grid=self.grid,
            min_accepted=self.min_accepted,
        )


def thresholds_from(
    calibration: CascadeCalibration,
    app: str,
    judges: Sequence[TierJudge],
    computed_at: datetime | None = None,
) -> list[pb.Threshold]:
    """One pb.Threshold per tier, as published on reag.thresholds.v1, each stamped with the
    identity of the judge it was fitted on (a judge refuses any other: reag.judging.identity)."""
    stamp = Timestamp()
    stamp.FromDatetime(computed_at or datetime.now(UTC))
    out: list[pb.Threshold] = []
    for t, fit in enumerate(calibration.tiers, start=1):
        threshold = pb.Threshold(
            app=app,
            has_threshold=fit.threshold is not None,
            alpha=calibration.alpha,
            delta=fit.delta,
            n_calibration=fit.n,
            n_accepted=fit.n_accepted,
            calibration_hash=calibration.calibration_hash,
            mode=calibration.mode,
            temperature=fit.temperature,
            reason=fit.reason,
            min_accepted=fit.min_accepted,
        )
        JudgeIdentity.of_judge(judges[t - 1]).stamp(threshold)
        if fit.threshold is not None:
            threshold.threshold = fit.threshold
            threshold.risk = fit.risk or 0.0
            threshold.risk_upper = fit.risk_upper or 0.0
        threshold.computed_at.CopyFrom(stamp)
        out.append(threshold)
    return out
