"""Conformal calibration of the judge cascade (paper 3.4.2) and its α sweep.

Pure statistics on judge scores: no model calls and no Kafka. The judges
produce ``ScoreRecord``s; this package turns them into per-tier thresholds
with a finite-sample risk guarantee, routes items through the calibrated
cascade, and measures coverage, selective agreement and honest cost.
"""

from reag.calibration.bounds import clopper_pearson_interval, clopper_pearson_upper
from reag.calibration.cascade import (
    ABSTAIN,
    CascadeCalibration,
    Mode,
    calibrate_table,
    route,
    route_table,
)
from reag.calibration.errors import (
    CalibrationError,
    InvalidRangeError,
    MissingScoreError,
    ScoreFileError,
)
from reag.calibration.fixed_sequence import (
    DEFAULT_GRID,
    Grid,
    ThresholdFit,
    fit_threshold,
)
from reag.calibration.scaling import DEFAULT_TEMPERATURES, fit_tier
from reag.calibration.scores import ScoreRecord, ScoreTable, pivot, read_scores, write_scores
from reag.calibration.temperature import apply_temperature
from reag.fit_defaults import DEFAULT_MIN_ACCEPTED, DEFAULT_TAU

__all__ = [
    "ABSTAIN",
    "DEFAULT_GRID",
    "DEFAULT_MIN_ACCEPTED",
    "DEFAULT_TAU",
    "DEFAULT_TEMPERATURES",
    "CalibrationError",
    "CascadeCalibration",
    "Grid",
    "InvalidRangeError",
    "MissingScoreError",
    "Mode",
    "ScoreFileError",
    "ScoreRecord",
    "ScoreTable",
    "ThresholdFit",
    "apply_temperature",
    "calibrate_table",
    "clopper_pearson_interval",
    "clopper_pearson_upper",
    "fit_threshold",
    "fit_tier",
    "pivot",
    "read_scores",
    "route",
    "route_table",
    "write_scores",
]
