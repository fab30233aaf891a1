"""Charts as ``data:`` URIs, so the report carries its pictures inside itself."""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from dataclasses import dataclass

from matplotlib.figure import Figure

from reag.calibration.plots import (
    DPI,
    cost_figure,
    coverage_agreement_figure,
    distribution_figure,
    reliability_figure,
)
from reag.calibration.scores import ScoreRecord
from reag.calibration.sweep import SweepResult


@dataclass(frozen=True, slots=True)
class Chart:
    """A PNG as a ``data:`` URI with the sentence that says what it shows."""

    title: str
    caption: str
    uri: str


def png_uri(figure: Figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def calibration_charts(scores: Sequence[ScoreRecord], sweep: SweepResult | None) -> list[Chart]:
    """The reliability curves from the scores, then the α sweep's three plots if it ran."""
    charts: list[Chart] = []
    if scores:
        charts.append(
            Chart(
                "Calibration curves",
                "Per judge tier, agreement with the expert against stated confidence; "
                "points below the dashed line are overconfident.",
                png_uri(reliability_figure(scores)),
            )
        )
    if sweep is not None and sweep.cascade:
        charts += [
            Chart(
                "α sweep: coverage and selective agreement",
                "Share of items a judge accepted and how often accepted verdicts agreed "
                "with the expert, for each target disagreement rate α.",
                png_uri(coverage_agreement_figure(sweep)),
            ),
            Chart(
                "α sweep: which judge decided",
                "Share of evaluation items decided by each tier or abstained to review.",
                png_uri(distribution_figure(sweep)),
            ),
            Chart(
                "α sweep: cost",
                "Cost per 100 items charging every call made, beside the understated "
                "deciding-tier-only figure.",
                png_uri(cost_figure(sweep)),
            ),
        ]
    return charts
