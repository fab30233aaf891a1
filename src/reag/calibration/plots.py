"""PNG plots of a sweep and of judge calibration.

Uses matplotlib's object API (no pyplot), so no GUI backend is touched. The
figure builders are public so the HTML run report (``reag.report``) embeds
the same pictures ``reag sweep`` writes to files.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from reag.calibration.scores import ScoreRecord
from reag.calibration.sweep import SweepResult

COVERAGE_PNG = "coverage_agreement.png"
DISTRIBUTION_PNG = "judge_distribution.png"
COST_PNG = "cost.png"
DPI = 120
RELIABILITY_BINS = 10


def _nan(value: float | None) -> float:
    return float("nan") if value is None else value


def coverage_agreement_figure(result: SweepResult) -> Figure:
    alphas = np.array([r.alpha for r in result.cascade])
    rate = np.array([_nan(r.selective.rate) for r in result.cascade])
    low = np.array([r.selective.interval[0] for r in result.cascade])
    high = np.array([r.selective.interval[1] for r in result.cascade])
    fig = Figure(figsize=(7, 4.5))
    ax = fig.add_subplot()
    ax.plot(alphas, [r.coverage for r in result.cascade], "s-", label="selection coverage")
    ax.errorbar(
        alphas,
        rate,
        yerr=np.vstack([rate - low, high - rate]),
        fmt="o-",
        capsize=3,
        label="selective agreement (95% CI)",
    )
    ax.plot(alphas, 1.0 - alphas, "k--", label="target 1 − α")
    for j in result.judges_full:
        ax.axhline(_nan(j.full.rate), linestyle=":", linewidth=1, color="grey")
        ax.annotate(f"J{j.tier} alone, full set", (alphas.min(), _nan(j.full.rate)), fontsize=7)
    ax.set_xlabel("α")
    ax.set_ylim(0.0, 1.02)
    ax.set_title(
        f"Cascade, {result.mode} mode, δ = {result.delta:g}, n_eval = {result.n_evaluation}"
    )
    ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    return fig


def distribution_figure(result: SweepResult) -> Figure:
    alphas = np.array([r.alpha for r in result.cascade])
    width = 0.8 * (np.min(np.diff(alphas)) if alphas.size > 1 else 0.02)
    fig = Figure(figsize=(7, 4.5))
    ax = fig.add_subplot()
    bottom = np.zeros(alphas.size)
    parts = [
        *((f"J{t + 1}", np.array([r.tier_pct[t] for r in result.cascade]))
          for t in range(result.n_tiers)),
        ("abstain", np.array([r.abstain_pct for r in result.cascade])),
    ]  # fmt: skip
    for label, share in parts:
        ax.bar(alphas, share, width=width, bottom=bottom, label=label)
        bottom += share
    ax.set_xlabel("α")
    ax.set_ylabel("% of evaluation items")
    ax.set_title("Which judge decided")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def cost_figure(result: SweepResult) -> Figure:
    alphas = np.array([r.alpha for r in result.cascade])
    fig = Figure(figsize=(10, 4.5))
    ax_cost, ax_cpp = fig.subplots(1, 2)
    ax_cost.plot(alphas, [r.cost_per_100 for r in result.cascade], "o-", label="every call")
    ax_cost.plot(
        alphas,
        [r.deciding_cost_per_100 for r in result.cascade],
        "x--",
        label="deciding tier only (paper)",
    )
    ax_cpp.plot(alphas, [_nan(r.cpp) for r in result.cascade], "o-", label="every call")
    ax_cpp.plot(
        alphas,
        [_nan(r.deciding_cpp) for r in result.cascade],
        "x--",
        label="deciding tier only (paper)",
    )
    for j in result.judges_full:
        ax_cost.axhline(j.cost_per_100, linestyle=":", color="grey")
        ax_cost.annotate(f"J{j.tier} alone", (alphas.min(), j.cost_per_100), fontsize=7)
        ax_cpp.axhline(_nan(j.cpp), linestyle=":", color="grey")
        ax_cpp.annotate(f"J{j.tier} alone (full set)", (alphas.min(), _nan(j.cpp)), fontsize=7)
    unit = "USD" if result.cost_unit == "usd" else "relative units"
    ax_cost.set_title(f"Cost per 100 items ({unit})")
    ax_cpp.set_title("Cost per performance (cost / agreement %)")
    for ax in (ax_cost, ax_cpp):
        ax.set_xlabel("α")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def reliability_figure(records: Sequence[ScoreRecord], bins: int = RELIABILITY_BINS) -> Figure:
    """Per tier: how often a verdict given with confidence c agreed with the expert.

    A judge whose points lie below the diagonal is overconfident: its raw
    confidence cannot be read as a probability, which is why thresholds are
    calibrated on labels (fixed-sequence testing) rather than set by hand.
    Binary max-label confidences live in [0.5, 1], so the bins cover that range.
    """
    fig = Figure(figsize=(7, 4.5))
    ax = fig.add_subplot()
    edges = np.linspace(0.5, 1.0, bins + 1)
    for tier in sorted({r.tier for r in records}):
        mine = [r for r in records if r.tier == tier]
        confidence = np.array([r.confidence for r in mine])
        agreed = np.array([r.verdict == r.label for r in mine], dtype=np.float64)
        index = np.clip(np.digitize(confidence, edges) - 1, 0, bins - 1)
        counts = np.bincount(index, minlength=bins)
        filled = counts > 0
        mean_conf = np.bincount(index, weights=confidence, minlength=bins)[filled] / counts[filled]
        rate = np.bincount(index, weights=agreed, minlength=bins)[filled] / counts[filled]
        ax.plot(mean_conf, rate, "o-", label=f"J{tier} ({len(mine)} items)")
    ax.plot([0.5, 1.0], [0.5, 1.0], "k--", linewidth=1, label="perfectly calibrated")
    ax.set_xlabel("judge confidence (bin mean)")
    ax.set_ylabel("agreement with the expert")
    ax.set_ylim(0.0, 1.02)
    ax.set_title("Calibration of each judge's confidence")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig


def write_plots(result: SweepResult, out_dir: Path) -> list[Path]:
    paths = [out_dir / COVERAGE_PNG, out_dir / DISTRIBUTION_PNG, out_dir / COST_PNG]
    figures = (
        coverage_agreement_figure(result),
        distribution_figure(result),
        cost_figure(result),
    )
    for figure, path in zip(figures, paths, strict=True):
        figure.savefig(path, dpi=DPI)
    return paths
