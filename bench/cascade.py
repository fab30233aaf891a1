"""Benchmark: the calibrated cascade against each judge alone, with honest cost.

Reads judge scores on the example app's labelled set (a ScoreRecord JSONL,
e.g. what ``reag calibrate --labels`` stored) from ``REAG_BENCH_SCORES``,
splits the items in half (calibration / evaluation), and prints, for
α = 0.10…0.40, the cascade's coverage, selective agreement and cost per
performance charging every call, beside each judge alone. Optional:
``REAG_BENCH_TIER_COSTS`` (default 1,3,4.6, used unless every record has
cost_usd), ``REAG_BENCH_SEED`` (default 0), ``REAG_BENCH_OUT`` (a folder for
the CSV, Markdown and plots).
"""

from __future__ import annotations

import os
from pathlib import Path

from reag.calibration import read_scores
from reag.calibration.report import markdown, write_sweep
from reag.calibration.sweep import (
    SweepResult,
    parse_alphas,
    parse_tier_costs,
    run_sweep,
    split_records,
)

ALPHAS = "0.10:0.40:0.02"
DELTA = 0.1


def _cpp(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def comparison(result: SweepResult) -> str:
    """Per α: the cascade's honest CPP beside each judge alone (selective and full set)."""
    judges = [j.tier for j in result.judges_full]
    selective = {(s.alpha, s.tier): s for s in result.judges_selective}
    full = " · ".join(f"J{j.tier} {_cpp(j.cpp)}" for j in result.judges_full)
    lines = [
        f"cascade ({result.mode} mode, δ={result.delta:g}) vs each judge alone; CPP = cost per "
        f"100 items ({result.cost_unit}) / agreement %; full-set CPP alone: {full or 'n/a'}",
        "",
        "| α | coverage | selective agreement (accepted) | cascade CPP, every call "
        "| cascade CPP, deciding tier only | "
        + " | ".join(f"J{t} alone, selective CPP (coverage)" for t in judges)
        + " |",
        "|---|---|---|---|---|" + "---|" * len(judges),
    ]
    for row in result.cascade:
        rate = row.selective.rate
        agreement = "–" if rate is None else f"{100 * rate:.1f}% ({row.selective.n})"
        cells = [
            f"{_cpp(selective[row.alpha, t].cpp)} ({100 * selective[row.alpha, t].coverage:.0f}%)"
            for t in judges
        ]
        lines.append(
            f"| {row.alpha:.2f} | {100 * row.coverage:.1f}% | {agreement} | {_cpp(row.cpp)} "
            f"| {_cpp(row.deciding_cpp)} | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines)


def run() -> None:
    source = os.environ.get("REAG_BENCH_SCORES")
    if not source:
        print(
            "cascade bench skipped: set REAG_BENCH_SCORES to a JSONL of judge scores on the "
            "example app's labelled set (one line per item and tier)"
        )
        return
    cal, evaluation = split_records(
        read_scores(Path(source)), None, fraction=0.5,
        seed=int(os.environ.get("REAG_BENCH_SEED", "0")),
    )  # fmt: skip
    result = run_sweep(
        cal, evaluation, alphas=parse_alphas(ALPHAS), delta=DELTA,
        tier_costs=parse_tier_costs(os.environ.get("REAG_BENCH_TIER_COSTS", "1,3,4.6")),
    )  # fmt: skip
    print(comparison(result))
    out = os.environ.get("REAG_BENCH_OUT")
    if out:
        paths = write_sweep(result, Path(out))
        print("\nwrote " + ", ".join(str(p) for p in paths))
    else:
        print()
        print(markdown(result))


if __name__ == "__main__":
    run()
