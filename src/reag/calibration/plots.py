"""PNG plots of a sweep. Uses matplotlib's object API (no pyplot), so no GUI backend is touched."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from reag.calibration.sweep import SweepResult

COVERAGE_PNG = "coverage_agreement.png"
DISTRIBUTION_PNG = "judge_distribution.png"
COST_PNG = "cost.png"


def _nan(value: float | None) -> float:
    return float("nan") if value is None else value


def _coverage_agreement(result: SweepResult, path: Path) -> None:
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
    fig.savefig(path, dpi=120)


def _distribution(result: SweepResult, path: Path) -> None:
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
    fig.savefig(path, dpi=120)


def _cost(result: SweepResult, path: Path) -> None:
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
    fig.savefig(path, dpi=120)


def write_plots(result: SweepResult, out_dir: Path) -> list[Path]:
    paths = [out_dir / COVERAGE_PNG, out_dir / DISTRIBUTION_PNG, out_dir / COST_PNG]
    _coverage_agreement(result, paths[0])
    _distribution(result, paths[1])
    _cost(result, paths[2])
    return paths
