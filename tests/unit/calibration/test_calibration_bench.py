"""bench/cascade.py prints the cascade's honest CPP beside each judge alone."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from numpy.typing import NDArray

from reag.calibration import ScoreRecord, write_scores

Draw = Callable[
    [np.random.Generator, int], tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.float64]]
]
BENCH = Path(__file__).resolve().parents[3] / "bench" / "cascade.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_cascade", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_prints_one_row_per_alpha_with_every_judge(
    tmp_path: Path,
    judges: Draw,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    confidence, wrong, _ = judges(np.random.default_rng(8), 400)
    records = [
        ScoreRecord(
            item_id=f"i{i}", tier=t + 1, verdict="NO" if wrong[i, t] else "YES",
            confidence=float(confidence[i, t]), label="YES",
        )
        for i in range(400)
        for t in range(3)
    ]  # fmt: skip
    scores = tmp_path / "scores.jsonl"
    write_scores(scores, records)
    monkeypatch.setenv("REAG_BENCH_SCORES", str(scores))
    monkeypatch.setenv("REAG_BENCH_OUT", str(tmp_path / "out"))
    _load().run()
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| 0.")]
    alphas = [f"| {0.10 + 0.02 * i:.2f}" for i in range(16)]
    # Each table the bench prints (side-by-side comparison, full sweep) has one row per α.
    assert rows
    assert len(rows) % len(alphas) == 0
    for start in range(0, len(rows), len(alphas)):
        table = rows[start : start + len(alphas)]
        assert [row.split(" | ")[0] for row in table] == alphas
        assert len({row.count("|") for row in table}) == 1
    assert "full-set CPP alone: J1 " in out
    assert (tmp_path / "out" / "sweep.csv").exists()
