"""Settings of the calibrator: the statistics, how often to recalibrate, the shared cascade.

REAG_TIER_MODELS and the annotator settings must match the judge deployments'
(``CascadeSettings``): the calibrator scores reviewed items with the very
prompts the judges use.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from reag.calibration.fixed_sequence import Grid
from reag.calibration_run.fitting import FitSpec
from reag.fit_defaults import (
    DEFAULT_ALPHA,
    DEFAULT_DELTA,
    DEFAULT_GRID,
    DEFAULT_MIN_ACCEPTED,
    DEFAULT_TAU,
)
from reag.judging.settings import CascadeSettings
from services.kit.settings import ServiceSettings


class CalibratorSettings(ServiceSettings, CascadeSettings):
    recalibrate_every: int = Field(
        default=20,
        ge=1,
        description="Recalibrate an app after this many new review labels (M).",
    )
    alpha: float = Field(
        default=DEFAULT_ALPHA,
        gt=0,
        lt=1,
        description="Tolerated disagreement rate among accepted verdicts, per tier.",
    )
    delta: float = Field(
        default=DEFAULT_DELTA,
        gt=0,
        lt=1,
        description="Allowed probability that the risk bound fails.",
    )
    mode: Literal["cascade", "independent", "system"] = Field(
        default="cascade",
        description=(
            "cascade: tier t+1 fit on what tiers 1..t leave; independent: every tier on every "
            "item; system: cascade with δ split across tiers (whole accepted set risk ≤ α)."
        ),
    )
    tau: int = Field(
        default=DEFAULT_TAU,
        ge=0,
        description="Temperature-scale a tier accepting fewer calibration items than this.",
    )
    grid: str = Field(
        default=DEFAULT_GRID,
        description="Candidate thresholds START:STOP:STEP.",
    )
    min_accepted: int = Field(
        default=DEFAULT_MIN_ACCEPTED,
        ge=1,
        description=(
            "Pass over candidate thresholds accepting fewer calibration items (not tested, not "
            "a failure), so a judge whose confidences never reach 1 is not stopped by the bound "
            "on its few most confident items; 1 passes over only empty candidates."
        ),
    )

    def fit_spec(self) -> FitSpec:
        """The fit these settings ask for: the one carrier of a fit's parameters."""
        return FitSpec(
            alpha=self.alpha,
            delta=self.delta,
            mode=self.mode,
            tau=self.tau,
            grid=Grid.parse(self.grid),
            min_accepted=self.min_accepted,
        )
