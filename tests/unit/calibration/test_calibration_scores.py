"""Score files: round trip, errors that name the line, and the pivot's consistency checks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from reag.calibration import CalibrationError, ScoreFileError, ScoreRecord, pivot, read_scores
from reag.calibration.scores import ScoreTable, write_scores


def _record(item: str, tier: int, verdict: str, confidence: float, label: str) -> ScoreRecord:
    return ScoreRecord.model_validate(
        {"item_id": item, "tier": tier, "verdict": verdict, "confidence": confidence,
         "label": label}
    )  # fmt: skip


def test_round_trip_keeps_every_field(tmp_path: Path) -> None:
    records = [
        ScoreRecord(
            item_id="a", tier=1, verdict="YES", confidence=0.93, label="NO",
            persona_category="diabetic", cost_usd=0.0012,
        ),
        _record("a", 2, "NO", 0.6, "NO"),
    ]  # fmt: skip
    path = tmp_path / "scores.jsonl"
    write_scores(path, records)
    assert read_scores(path) == records


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r":3: not valid JSON"),
        ('{"item_id": "x", "tier": 1, "verdict": "MAYBE", "confidence": 0.9, "label": "NO"}',
         r":3: verdict: "),
        ('{"item_id": "x", "tier": 1, "verdict": "YES", "confidence": 1.5, "label": "NO"}',
         r":3: confidence: "),
        ('{"item_id": "x", "tier": 0, "verdict": "YES", "confidence": 0.5, "label": "NO"}',
         r":3: tier: "),
        ('{"item_id": "x", "verdict": "YES", "confidence": 0.5, "label": "NO"}', r":3: tier: "),
        ("[1, 2]", r":3: expected a JSON object"),
    ],
)  # fmt: skip
def test_a_bad_line_is_named(tmp_path: Path, line: str, message: str) -> None:
    good = json.dumps(
        {"item_id": "a", "tier": 1, "verdict": "YES", "confidence": 0.9, "label": "YES"}
    )
    path = tmp_path / "scores.jsonl"
    path.write_text(f"{good}\n\n{line}\n{good}\n")
    with pytest.raises(ScoreFileError, match=message):
        read_scores(path)


def test_missing_and_empty_files_are_errors(tmp_path: Path) -> None:
    with pytest.raises(ScoreFileError, match="cannot read"):
        read_scores(tmp_path / "absent.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(ScoreFileError, match="no score records"):
        read_scores(tmp_path / "empty.jsonl")


def test_pivot_lays_out_items_and_tiers() -> None:
    table = pivot(
        [
            _record("b", 2, "NO", 0.7, "YES"),
            _record("a", 1, "YES", 0.9, "YES"),
            _record("b", 1, "YES", 0.55, "YES"),
        ]
    )
    assert table.item_ids == ("a", "b")
    assert table.n_tiers == 2
    assert table.present.tolist() == [[True, False], [True, True]]
    assert np.isnan(table.confidence[0, 1])
    assert table.confidence[1].tolist() == [0.55, 0.7]
    assert table.wrong.tolist() == [[False, False], [False, True]]


def test_pivot_refuses_duplicates_and_conflicting_labels() -> None:
    with pytest.raises(CalibrationError, match="two records for tier 1"):
        pivot([_record("a", 1, "YES", 0.9, "YES"), _record("a", 1, "NO", 0.8, "YES")])
    with pytest.raises(CalibrationError, match="conflicting expert labels"):
        pivot([_record("a", 1, "YES", 0.9, "YES"), _record("a", 2, "NO", 0.8, "NO")])


def test_hash_depends_on_items_and_labels_not_order() -> None:
    one = pivot([_record("a", 1, "YES", 0.9, "YES"), _record("b", 1, "NO", 0.8, "NO")])
    same = pivot([_record("b", 1, "YES", 0.6, "NO"), _record("a", 1, "NO", 0.7, "YES")])
    relabelled = pivot([_record("a", 1, "YES", 0.9, "NO"), _record("b", 1, "NO", 0.8, "NO")])
    assert one.calibration_hash() == same.calibration_hash()
    assert one.calibration_hash() != relabelled.calibration_hash()


def test_split_is_by_item_and_reproducible() -> None:
    rng = np.random.default_rng(0)
    table = ScoreTable.from_arrays(rng.uniform(0.5, 1, (101, 3)), rng.random((101, 3)) < 0.2)
    cal, ev = table.split(0.5, seed=7)
    again, _ = table.split(0.5, seed=7)
    assert cal.item_ids == again.item_ids
    assert set(cal.item_ids).isdisjoint(ev.item_ids)
    assert cal.n_items + ev.n_items == 101
    row = table.item_ids.index(cal.item_ids[0])
    assert cal.confidence[0].tolist() == table.confidence[row].tolist()
    with pytest.raises(CalibrationError, match="one side empty"):
        table.subset(np.arange(101) < 1).split(0.5, seed=0)
