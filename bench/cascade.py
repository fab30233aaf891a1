"""Benchmark: the calibrated cascade against each judge alone, with honest cost.

On the example app's labelled set (examples/nutrition/calibration.jsonl), the
three tier judges score every item (N annotators × K examples each, the
production prompts), the items are split in half (seeded) into calibration
and evaluation sets, and for α = 0.10…0.40 the calibration engineer's sweep
prints the cascade's coverage, selective agreement and cost per performance
charging every call made, beside each judge alone; the CSV, Markdown and
plots go to bench/out/.

Scores are stored in the calibration store (REAG_STORE_DSN, default
<state_dir>/reag.db) under (app, tier, model, prompt version, item), so a
rerun makes no model call; the first run's scoring time is printed. Tier
models come from REAG_TIER_MODELS; unset, all three tiers are the local 270M
base model, which the output says plainly (the cascade then asks the same
judge three times, and a tier's scores are copied from the tier below).

Cost: recorded USD when the tiers are priced models; the local model costs
nothing, so then relative per-call tier costs are used (REAG_BENCH_TIER_COSTS,
default 1,3,4.6 as in the paper's table 3). Knobs: REAG_BENCH_SEED (split,
default 0), REAG_BENCH_OUT (default bench/out), REAG_BENCH_LABELS (another
labelled set), REAG_BENCH_LIMIT (score only the set's first N items: a
partial run on a busy machine), REAG_BENCH_SCORES (a ScoreRecord JSONL to use
instead of scoring, e.g. scores from capable models made elsewhere).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from pathlib import Path

from reag.calibration import ScoreRecord, pivot, read_scores
from reag.calibration.sweep import SweepResult, parse_alphas, parse_tier_costs, run_sweep
from reag.calibration.sweep_output import markdown, write_sweep
from reag.calibration_run.scoring import Progress

ROOT = Path(__file__).resolve().parents[1]
LABELS = ROOT / "examples" / "nutrition" / "calibration.jsonl"
OUT = Path(__file__).resolve().parent / "out"
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


def _progress(started: float) -> Progress:
    def report(tier: int, done: int, total: int) -> None:
        if done == total or done % 10 == 0:
            print(
                f"  tier {tier}: {done}/{total} items scored "
                f"({time.perf_counter() - started:.0f} s)",
                flush=True,
            )

    return report


def score_example_set(labels: Path) -> list[ScoreRecord]:
    """Every tier on every labelled item, from the store where already scored."""
    from reag.calibration.store import CalibrationStore
    from reag.calibration_run.clients import make_tier_clients
    from reag.calibration_run.scoring import ScoringStats, score_labelled_file
    from reag.judging.settings import CascadeSettings

    settings = CascadeSettings()
    clients = make_tier_clients(settings, "bench")
    models = [c.model for c in clients]
    if len(set(models)) == 1:
        print(
            f"tiers: all three are {models[0]} (REAG_TIER_MODELS unset or naming one "
            "model). Escalating asks the same judge again, and the local base model has no "
            "judging skill: expect no thresholds and everything abstained."
        )
    else:
        print("tiers: " + " → ".join(models))
    print(
        f"annotators: N={settings.annotators}, K={settings.examples}, seed={settings.seed}; "
        f"store: {settings.resolved_store_dsn()}"
    )
    store = CalibrationStore.open(settings.resolved_store_dsn())
    stats = ScoringStats()
    started = time.perf_counter()
    limit = int(os.environ["REAG_BENCH_LIMIT"]) if os.environ.get("REAG_BENCH_LIMIT") else None
    if limit is not None:
        print(f"REAG_BENCH_LIMIT: scoring only the first {limit} items of {labels.name}")
    records = asyncio.run(
        score_labelled_file(
            labels,
            store,
            clients,
            settings,
            stats=stats,
            progress=_progress(started),
            limit=limit,
        )
    )
    print(f"scoring: {stats.line()}; wall {time.perf_counter() - started:.1f} s")
    return records


def _priced(records: Sequence[ScoreRecord]) -> bool:
    return any((r.cost_usd or 0.0) > 0.0 for r in records)


def run() -> None:
    source = os.environ.get("REAG_BENCH_SCORES")
    labels = Path(os.environ.get("REAG_BENCH_LABELS", str(LABELS)))
    records = read_scores(Path(source)) if source else score_example_set(labels)
    tier_costs = None
    if not _priced(records):
        costs = os.environ.get("REAG_BENCH_TIER_COSTS", "1,3,4.6")
        print(f"cost: no recorded USD (local model), so relative per-call tier costs {costs}")
        records = [r.model_copy(update={"cost_usd": None}) for r in records]
        tier_costs = parse_tier_costs(costs)
    seed = int(os.environ.get("REAG_BENCH_SEED", "0"))
    cal, evaluation = pivot(records).split(0.5, seed)
    print(f"split (seed {seed}): {cal.n_items} calibration, {evaluation.n_items} evaluation items")
    result = run_sweep(
        cal, evaluation, alphas=parse_alphas(ALPHAS), delta=DELTA, tier_costs=tier_costs
    )
    print(comparison(result))
    print()
    print(markdown(result))
    out = Path(os.environ.get("REAG_BENCH_OUT", str(OUT)))
    paths = write_sweep(result, out)
    print("wrote " + ", ".join(str(p) for p in paths))


if __name__ == "__main__":
    run()
