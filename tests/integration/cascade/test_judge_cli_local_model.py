"""`reag judge --app A --json` on the real Qwen2.5-Coder 1.5B: annotators who disagree.

Three annotators, each shown two different expert-labelled items of the
nutrition example (pinned in a temporary calibration store), judge short
borderline cases. Where they split across 0.5, the mean of each annotator's
max differs from the max of their mean distribution; the printed confidence
must be the latter (eq. 4) and the verdict its label. The cases are tried in
turn until one splits, since a prompt change can move any single case.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from reag.calibration.store import CalibrationStore
from reag.calibration_run.files import read_labelled
from shell.cli.judge import register

pytestmark = [pytest.mark.llm, pytest.mark.slow]

MODEL = "local:qwen2.5-coder-1.5b-instruct"
LABELLED = Path(__file__).parents[3] / "examples" / "nutrition" / "calibration.jsonl"
COCONUT = "Is this coconut water a healthy choice after my walk?"
# Borderline cases: the model's P(YES) sits near 0.5, where different examples tip it.
CASES = [
    (
        "FAIL if the response does not relate the drink's sugar content to the user's diabetes.",
        COCONUT + " I have type 2 diabetes.",
        "Coconut water is refreshing and rich in potassium. "
        "Score card 74/100 (B), sugar 12/20, a moderate sugar load.",
    ),
    (
        "FAIL if the response does not mention the sugar content.",
        COCONUT,
        "Coconut water is refreshing and rich in potassium. Score card 74/100 (B), sugar 12/20.",
    ),
    (
        "FAIL if the response does not relate the drink's sugar content to the user's diabetes.",
        COCONUT + " I have type 2 diabetes.",
        "Coconut water is a natural, refreshing drink, rich in potassium. It has 17 g of "
        "sugar per carton, so keep an eye on your sugar. Enjoy it chilled!",
    ),
]


def test_reag_judge_reports_the_max_of_the_annotators_mean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dsn = f"sqlite:///{tmp_path / 'reag.db'}"
    for name in ("REAG_LLM_LOCAL_URL", "REAG_SEED", "REAG_TIER_MODELS", "REAG_SAMPLES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("REAG_STORE_DSN", dsn)
    CalibrationStore.open(dsn).add_items(read_labelled(LABELLED)[:8])
    cli = typer.Typer()
    cli.callback()(lambda: None)  # a group, so `judge` stays a named subcommand
    register(cli)

    disagreeing = []
    for criterion, query, response in CASES:
        result = CliRunner().invoke(
            cli,
            ["judge", "--app", "nutrition", "--model", MODEL, "--annotators", "3",
             "--examples", "2", "--criterion", criterion, "--query", query,
             "--response", response, "--json"],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        out = json.loads(result.stdout)
        annotators = out["annotators"]
        assert out["model"] == MODEL
        assert len(annotators) == 3
        mean = {y: sum(a[y] for a in annotators) / 3 for y in ("YES", "NO")}
        assert out["confidence"] == pytest.approx(max(mean.values()), abs=1e-9)
        assert out["verdict"] == ("YES" if mean["YES"] > mean["NO"] else "NO")
        assert out["threshold"] is None  # none recorded for the app
        assert out["accepted"] is False
        mean_of_max = sum(max(a.values()) for a in annotators) / 3
        if abs(mean_of_max - out["confidence"]) > 1e-6:
            disagreeing.append(out)
            break
    assert disagreeing, "no case split the annotators"
    print(json.dumps(disagreeing[0]))
