"""The α sweep: fit on one split, measure on the other, honest cost, separate baselines."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from reag.calibration import ABSTAIN, CalibrationError, ScoreTable, calibrate_table, route_table
from reag.calibration.cost import honest_cost
from reag.calibration.errors import InvalidRangeError
from reag.calibration.sweep import SweepResult, parse_alphas, parse_tier_costs, run_sweep
from reag.calibration.sweep_output import markdown, write_sweep

Draw = Callable[
    [np.random.Generator, int], tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.float64]]
]
COSTS = (1.0, 3.0, 4.6)
ALPHAS = (0.06, 0.1, 0.14, 0.2)


@pytest.fixture
def splits(judges: Draw) -> tuple[ScoreTable, ScoreTable]:
    rng = np.random.default_rng(5)
    confidence, wrong, _ = judges(rng, 1000)
    labels = rng.random(1000) < 0.6
    return ScoreTable.from_arrays(confidence, wrong, labels_yes=labels).split(0.5, seed=1)


@pytest.fixture
def result(splits: tuple[ScoreTable, ScoreTable]) -> SweepResult:
    cal, ev = splits
    return run_sweep(cal, ev, alphas=ALPHAS, delta=0.1, tier_costs=COSTS)


def test_parse_alphas_and_costs() -> None:
    assert parse_alphas("0.10:0.40:0.02") == tuple(round(0.10 + 0.02 * i, 2) for i in range(16))
    assert parse_alphas("0.1,0.14") == (0.1, 0.14)
    assert parse_tier_costs("1,3,4.6") == COSTS
    for bad in ("0.4:0.1:0.02", "0:0.5:0.1", "a,b", "0.1:0.2"):
        with pytest.raises(InvalidRangeError):
            parse_alphas(bad)
    with pytest.raises(InvalidRangeError):
        parse_tier_costs("1,-3")


def test_each_row_is_what_routing_the_evaluation_set_gives(
    splits: tuple[ScoreTable, ScoreTable], result: SweepResult
) -> None:
    cal, ev = splits
    for row in result.cascade:
        decided = route_table(calibrate_table(cal, alpha=row.alpha, delta=0.1), ev)
        accepted = decided != ABSTAIN
        correct = ~ev.wrong[np.flatnonzero(accepted), decided[accepted] - 1]
        assert row.selective.n == accepted.sum()
        assert row.selective.agree == correct.sum()
        assert row.coverage == pytest.approx(accepted.mean())
        assert sum(row.tier_pct) + row.abstain_pct == pytest.approx(100.0)
        assert row.abstain_pct == pytest.approx(100 * (decided == ABSTAIN).mean())
        assert row.cost_per_100 == pytest.approx(100 * honest_cost(decided, COSTS) / ev.n_items)
        assert row.cpp == pytest.approx(row.cost_per_100 / (100 * correct.mean()))
        # Charging every call never costs less than charging the deciding tier.
        assert row.cost_per_100 >= row.deciding_cost_per_100
        assert row.cost_per_100 >= 100.0  # every item pays tier 1
        low, high = row.selective.interval
        assert low <= correct.mean() <= high


def test_cascade_uses_higher_tiers_at_smaller_alpha(result: SweepResult) -> None:
    strict, loose = result.cascade[0], result.cascade[-1]
    assert strict.tier_pct[0] < loose.tier_pct[0]
    assert strict.cost_per_100 > loose.cost_per_100


def test_baselines_keep_full_set_and_selective_apart(
    splits: tuple[ScoreTable, ScoreTable], result: SweepResult
) -> None:
    _, ev = splits
    assert [j.tier for j in result.judges_full] == [1, 2, 3]
    for j in result.judges_full:
        assert j.full.n == ev.n_items
        assert j.full.agree == (~ev.wrong[:, j.tier - 1]).sum()
        assert j.cost_per_100 == pytest.approx(100 * COSTS[j.tier - 1])
    assert len(result.judges_selective) == 3 * len(ALPHAS)
    for s in result.judges_selective:
        # A judge alone still pays for every item, accepted or not.
        assert s.cost_per_100 == pytest.approx(100 * COSTS[s.tier - 1])
        assert s.selective.n == round(s.coverage * ev.n_items)


def test_outputs_are_written(tmp_path: Path, result: SweepResult) -> None:
    paths = write_sweep(result, tmp_path / "out")
    names = sorted(p.name for p in paths)
    assert names == [
        "cost.png", "coverage_agreement.png", "judge_distribution.png", "sweep.csv", "sweep.md",
    ]  # fmt: skip
    for path in paths:
        assert path.stat().st_size > 0
    for png in (p for p in paths if p.suffix == ".png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with (tmp_path / "out" / "sweep.csv").open() as f:
        rows = list(csv.DictReader(f))
    kinds = [r["row"] for r in rows]
    assert kinds.count("cascade") == len(ALPHAS)
    assert kinds.count("judge_full_set") == 3
    assert kinds.count("judge_selective") == 3 * len(ALPHAS)
    for r in rows:
        if r["row"] == "judge_full_set":
            assert r["full_agreement"]
            assert not r["selective_agreement"]
        else:
            assert r["selective_agreement"]
            assert not r["full_agreement"]
    text = markdown(result)
    assert text == (tmp_path / "out" / "sweep.md").read_text()
    assert text.count("\n| 0.") == 2 * len(ALPHAS)
    assert "deciding-tier cost" in text


def test_usd_costs_from_records_replace_relative_units(
    splits: tuple[ScoreTable, ScoreTable],
) -> None:
    cal, ev = splits
    priced = ScoreTable(
        item_ids=ev.item_ids, labels_yes=ev.labels_yes, confidence=ev.confidence,
        verdict_yes=ev.verdict_yes, present=ev.present,
        cost_usd=np.broadcast_to(np.array([0.0001, 0.0004, 0.002]), ev.confidence.shape),
        persona_categories=ev.persona_categories,
    )  # fmt: skip
    result = run_sweep(cal, priced, alphas=(0.1,), delta=0.1)
    assert result.cost_unit == "usd"
    assert result.judges_full[2].cost_per_100 == pytest.approx(0.2)


def test_mismatched_tiers_are_refused(splits: tuple[ScoreTable, ScoreTable]) -> None:
    cal, ev = splits
    two_tiers = ScoreTable.from_arrays(ev.confidence[:, :2], ev.wrong[:, :2])
    with pytest.raises(CalibrationError, match="3 tiers but evaluation has 2"):
        run_sweep(cal, two_tiers, alphas=(0.1,), delta=0.1, tier_costs=COSTS)
