"""`reag calibrate` and `reag sweep` through typer, on a synthetic scores file."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import typer
from numpy.typing import NDArray
from typer.testing import CliRunner

from reag.calibration import ScoreRecord, calibrate_table, pivot, read_scores, write_scores
from shell.cli.calibrate import register

Draw = Callable[
    [np.random.Generator, int], tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.float64]]
]


@pytest.fixture
def cli() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


def _records(draw: Draw, n: int, seed: int, prefix: str = "item") -> list[ScoreRecord]:
    rng = np.random.default_rng(seed)
    confidence, wrong, _ = draw(rng, n)
    labels = np.where(rng.random(n) < 0.6, "YES", "NO")
    flip = {"YES": "NO", "NO": "YES"}
    return [
        ScoreRecord.model_validate({
            "item_id": f"{prefix}-{i}", "tier": t + 1, "label": labels[i],
            "verdict": flip[labels[i]] if wrong[i, t] else labels[i],
            "confidence": round(float(confidence[i, t]), 6),
            "persona_category": ("athlete", "diabetic")[i % 2],
        })
        for i in range(n)
        for t in range(confidence.shape[1])
    ]  # fmt: skip


@pytest.fixture
def scores(tmp_path: Path, judges: Draw) -> Path:
    path = tmp_path / "scores.jsonl"
    write_scores(path, _records(judges, 500, seed=9))
    return path


def test_calibrate_json_is_the_library_result(cli: typer.Typer, scores: Path) -> None:
    result = CliRunner().invoke(
        cli, ["calibrate", "--scores", str(scores), "--alpha", "0.12", "--delta", "0.05", "--json"]
    )
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    expected = calibrate_table(pivot(read_scores(scores)), alpha=0.12, delta=0.05)
    assert printed == json.loads(json.dumps(expected.summary()))
    assert set(printed["tiers"]) == {"1", "2", "3"}
    for key in ("threshold", "n_accepted", "risk", "risk_upper", "n", "temperature"):
        assert key in printed["tiers"]["1"]
    assert printed["tiers"]["1"]["threshold"] is not None
    assert printed["mode"] == "cascade"
    assert len(printed["calibration_hash"]) == 64


@pytest.mark.parametrize(
    ("flag", "mode"), [("--system", "system"), ("--independent", "independent")]
)
def test_calibrate_modes(cli: typer.Typer, scores: Path, flag: str, mode: str) -> None:
    result = CliRunner().invoke(cli, ["calibrate", "--scores", str(scores), flag, "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed["mode"] == mode
    if mode == "system":
        assert printed["tiers"]["2"]["delta"] == pytest.approx(0.1 / 3)
    else:
        assert all(tier["n"] == 500 for tier in printed["tiers"].values())


def test_calibrate_prints_a_table_by_default(cli: typer.Typer, scores: Path) -> None:
    result = CliRunner().invoke(cli, ["calibrate", "--scores", str(scores), "--tau", "0"])
    assert result.exit_code == 0, result.output
    assert "mode cascade" in result.stdout
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines[3:6]] == ["1", "2", "3"]
    assert all(f"tier {t}: " in result.stdout for t in (1, 2, 3))


def test_calibrate_errors_are_actionable(cli: typer.Typer, scores: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    both = runner.invoke(cli, ["calibrate", "--scores", str(scores), "--system", "--independent"])
    assert both.exit_code == 2
    assert "pick one" in both.stderr
    neither = runner.invoke(cli, ["calibrate"])
    assert neither.exit_code == 2
    assert "exactly one of --scores" in neither.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text(scores.read_text().splitlines()[0] + "\n{oops\n")
    broken = runner.invoke(cli, ["calibrate", "--scores", str(bad)])
    assert broken.exit_code == 2
    assert f"{bad}:2: not valid JSON" in broken.stderr


def test_labels_only_options_are_refused_with_scores(cli: typer.Typer, scores: Path) -> None:
    result = CliRunner().invoke(cli, ["calibrate", "--scores", str(scores), "--publish"])
    assert result.exit_code == 2
    assert "go with --labels" in result.stderr


def test_sweep_with_a_split(cli: typer.Typer, scores: Path, tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    result = CliRunner().invoke(
        cli,
        ["sweep", "--scores", str(scores), "--split", "0.5", "--seed", "3",
         "--alphas", "0.10:0.20:0.05", "--tier-costs", "1,3,4.6", "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "| 0.15 |" in result.stdout
    assert "(250)" in result.stdout  # the full-set baselines are measured on the other half
    for name in ("sweep.csv", "sweep.md", "coverage_agreement.png", "judge_distribution.png",
                 "cost.png"):  # fmt: skip
        assert (out / name).stat().st_size > 0


def test_sweep_with_an_evaluation_file(
    cli: typer.Typer, scores: Path, tmp_path: Path, judges: Draw
) -> None:
    evaluation = tmp_path / "eval.jsonl"
    write_scores(evaluation, _records(judges, 300, seed=10, prefix="eval"))
    out = tmp_path / "sweep"
    runner = CliRunner()
    result = runner.invoke(
        cli,
        ["sweep", "--scores", str(scores), "--eval-scores", str(evaluation),
         "--alphas", "0.1", "--mode", "system", "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "system mode" in result.stdout
    assert "measured on 300 other items" in result.stdout
    same = runner.invoke(
        cli, ["sweep", "--scores", str(scores), "--eval-scores", str(scores), "--out", str(out)]
    )
    assert same.exit_code == 2
    assert "in both the calibration and the evaluation" in same.stderr
    both = runner.invoke(
        cli, ["sweep", "--scores", str(scores), "--eval-scores", str(evaluation),
              "--split", "0.5", "--out", str(out)],
    )  # fmt: skip
    assert both.exit_code == 2


def test_min_accepted_is_shown_and_checked(cli: typer.Typer, scores: Path, tmp_path: Path) -> None:
    from reag.calibration import DEFAULT_MIN_ACCEPTED
    from shell.cli import calibrate

    # The CLI's default is the library's, read from reag.fit_defaults (light, so --help is fast).
    options = inspect.signature(calibrate.calibrate).parameters
    assert options["min_accepted"].default == DEFAULT_MIN_ACCEPTED
    runner = CliRunner()
    table = runner.invoke(cli, ["calibrate", "--scores", str(scores)])
    assert table.exit_code == 0, table.output
    assert "min accepted 30," in table.stdout.splitlines()[0]
    chosen = runner.invoke(cli, ["calibrate", "--scores", str(scores), "--min-accepted", "12"])
    assert "min accepted 12," in chosen.stdout.splitlines()[0]
    zero = runner.invoke(cli, ["calibrate", "--scores", str(scores), "--min-accepted", "0"])
    assert zero.exit_code == 2
    out = tmp_path / "sweep"
    swept = runner.invoke(
        cli,
        ["sweep", "--scores", str(scores), "--alphas", "0.1", "--min-accepted", "40",
         "--out", str(out)],
    )  # fmt: skip
    assert swept.exit_code == 0, swept.output
    assert "min accepted = 40" in swept.stdout
