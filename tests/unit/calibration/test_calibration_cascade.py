"""Calibration modes and routing through the calibrated cascade."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from numpy.typing import NDArray

from reag.calibration import (
    ABSTAIN,
    CalibrationError,
    MissingScoreError,
    ScoreRecord,
    ScoreTable,
    calibrate_table,
    fit_threshold,
    pivot,
    route,
    route_table,
)

Draw = Callable[
    [np.random.Generator, int], tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.float64]]
]


@pytest.fixture
def table(judges: Draw) -> ScoreTable:
    """600 items from the synthetic judges; with this seed every tier gets a threshold."""
    confidence, wrong, _ = judges(np.random.default_rng(0), 600)
    return ScoreTable.from_arrays(confidence, wrong)


def test_cascade_mode_fits_each_tier_on_what_it_would_see(table: ScoreTable) -> None:
    cal = calibrate_table(table, alpha=0.1, delta=0.1, tau=0)
    tier1 = fit_threshold(table.confidence[:, 0], table.wrong[:, 0], alpha=0.1, delta=0.1)
    assert cal.tiers[0] == tier1
    assert tier1.threshold is not None
    passed_up = ~tier1.accepts(table.confidence[:, 0])
    assert cal.tiers[1].n == passed_up.sum()
    assert cal.tiers[1] == fit_threshold(
        table.confidence[passed_up, 1], table.wrong[passed_up, 1], alpha=0.1, delta=0.1
    )
    passed_up &= ~cal.tiers[1].accepts(table.confidence[:, 1])
    assert cal.tiers[2].n == passed_up.sum()
    assert cal.tiers[2].n < cal.tiers[1].n < table.n_items


def test_independent_mode_fits_every_tier_on_every_item(table: ScoreTable) -> None:
    cal = calibrate_table(table, alpha=0.1, delta=0.1, mode="independent", tau=0)
    for t, fit in enumerate(cal.tiers):
        assert fit.n == table.n_items
        assert fit == fit_threshold(table.confidence[:, t], table.wrong[:, t], alpha=0.1, delta=0.1)


def test_system_mode_splits_delta_and_is_more_cautious(table: ScoreTable) -> None:
    plain = calibrate_table(table, alpha=0.1, delta=0.1, tau=0)
    system = calibrate_table(table, alpha=0.1, delta=0.1, mode="system", tau=0)
    assert system.delta == 0.1
    assert [f.delta for f in system.tiers] == pytest.approx([0.1 / 3] * 3)
    assert system.tiers[0].threshold is not None
    assert plain.tiers[0].threshold is not None
    assert system.tiers[0].threshold >= plain.tiers[0].threshold
    assert system.tiers[0] == fit_threshold(
        table.confidence[:, 0], table.wrong[:, 0], alpha=0.1, delta=0.1 / 3
    )


def test_route_sends_items_up_until_a_tier_accepts(table: ScoreTable) -> None:
    cal = calibrate_table(table, alpha=0.1, delta=0.1, tau=0)
    thresholds = [f.threshold for f in cal.tiers]
    assert all(t is not None for t in thresholds)
    lam1, lam2, lam3 = (float(t) for t in thresholds if t is not None)
    confidences = np.array(
        [
            [lam1, 0.0, 0.0],  # tier 1 accepts at exactly λ̂
            [lam1 - 0.001, lam2, 0.0],
            [lam1 - 0.001, lam2 - 0.001, lam3],
            [lam1 - 0.001, lam2 - 0.001, lam3 - 0.001],
        ]
    )
    assert route(cal, confidences).tolist() == [1, 2, 3, ABSTAIN]
    by_tier = {t + 1: confidences[:, t] for t in range(3)}
    assert route(cal, by_tier).tolist() == [1, 2, 3, ABSTAIN]


def test_route_needs_scores_only_where_items_go(table: ScoreTable) -> None:
    cal = calibrate_table(table, alpha=0.1, delta=0.1, tau=0)
    lam1 = cal.tiers[0].threshold
    assert lam1 is not None
    confidences = np.array([[lam1, np.nan, np.nan], [0.5, np.nan, np.nan]])
    with pytest.raises(MissingScoreError, match=r"tier 2 has no score for item.*'b'") as info:
        route(cal, confidences, item_ids=["a", "b"])
    assert info.value.item_ids == ("b",)
    assert route(cal, confidences[:1]).tolist() == [1]


def test_a_tier_without_threshold_passes_everything_up(table: ScoreTable) -> None:
    confidence = table.confidence.copy()
    wrong = table.wrong.copy()
    wrong[:, 0] = True  # tier 1 is always wrong: it can never be trusted
    cal = calibrate_table(ScoreTable.from_arrays(confidence, wrong), alpha=0.1, delta=0.1)
    assert cal.tiers[0].threshold is None
    assert cal.tiers[1].n == table.n_items
    assert 1 not in route_table(cal, ScoreTable.from_arrays(confidence, wrong)).tolist()


def _records(items: dict[str, list[tuple[int, float, bool]]]) -> list[ScoreRecord]:
    return [
        ScoreRecord(
            item_id=item, tier=tier, verdict="NO" if wrong else "YES", confidence=c,
            label="YES",
        )
        for item, scores in items.items()
        for tier, c, wrong in scores
    ]  # fmt: skip


def test_cascade_mode_errors_name_the_item_missing_a_needed_score() -> None:
    items = {f"ok{i}": [(1, 0.9999, False)] for i in range(40)}
    # Two wrong verdicts at 0.6 keep tier 1's threshold above 0.6.
    items["stuck"] = [(1, 0.6, True)]
    items["fine"] = [(1, 0.6, True), (2, 0.7, False)]
    with pytest.raises(MissingScoreError, match=r"tier 2 has no score for item.*'stuck'"):
        calibrate_table(pivot(_records(items)), alpha=0.1, delta=0.1)
    # Items tier 1 accepts need no tier-2 score; independent mode needs every score.
    del items["stuck"]
    calibrate_table(pivot(_records(items)), alpha=0.1, delta=0.1)
    with pytest.raises(MissingScoreError, match="tier 2"):
        calibrate_table(pivot(_records(items)), alpha=0.1, delta=0.1, mode="independent")


def test_summary_has_the_cli_json_shape() -> None:
    records = _records({f"i{i}": [(1, 0.9995, False), (2, 0.8, False)] for i in range(50)})
    cal = calibrate_table(pivot(records), alpha=0.1, delta=0.1)
    summary = cal.summary()
    assert summary["mode"] == "cascade"
    assert summary["calibration_hash"] == cal.calibration_hash
    assert set(summary["tiers"]) == {"1", "2"}
    tier1 = summary["tiers"]["1"]
    assert tier1["threshold"] == 0.5  # every candidate passes
    assert tier1["n_accepted"] == 50
    assert tier1["risk"] == 0.0
    assert tier1["risk_upper"] == pytest.approx(1 - 0.1 ** (1 / 50))
    assert summary["tiers"]["2"]["n"] == 0
    assert summary["tiers"]["2"]["threshold"] is None
    with pytest.raises(CalibrationError, match="mode"):
        calibrate_table(pivot(records), alpha=0.1, delta=0.1, mode="bogus")  # type: ignore[arg-type]
