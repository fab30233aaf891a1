"""`reag judge` through typer on a scripted model: the JSON, the threshold in force, the errors."""

from __future__ import annotations

import json
from collections.abc import Sequence
from itertools import cycle
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from reag.calibration.store import CalibrationStore
from reag.calibration_run.files import read_labelled
from reag.judging.identity import JudgeIdentity
from reag.llm.base import Message
from reag.llm.client import Caller, LLMClient
from reag.llm.scripted import FakeProvider
from reag.v1 import events_pb2 as pb
from shell.cli.judge import register

from .labelled_data import write_labelled

CASE = ["--criterion", "Warns about sugar.", "--query", "Cereal?", "--response", "Fine."]


@pytest.fixture
def cli() -> typer.Typer:
    app = typer.Typer()
    app.callback()(lambda: None)  # a group, so `judge` stays a named subcommand
    register(app)
    return app


@pytest.fixture
def dsn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{tmp_path / 'reag.db'}"
    monkeypatch.setenv("REAG_STORE_DSN", url)
    for name in ("REAG_SEED", "REAG_ANNOTATORS", "REAG_EXAMPLES"):
        monkeypatch.delenv(name, raising=False)
    CalibrationStore.open(url).add_items(read_labelled(write_labelled(tmp_path / "l.jsonl", 12)))
    return url


@pytest.fixture
def prompts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The model answers P(YES) 0.9, 0.2, 0.3 in turn; the prompts it saw are yielded."""
    seen: list[str] = []
    answers = cycle([0.9, 0.2, 0.3])

    def script(prompt: str | Sequence[Message], labels: Sequence[str]) -> dict[str, float]:
        seen.append(prompt if isinstance(prompt, str) else "\n".join(m.content for m in prompt))
        p = next(answers)
        return {"YES": p, "NO": 1 - p}

    def make_client(model: str | None = None, *, caller: Caller | None = None) -> LLMClient:
        return LLMClient(FakeProvider(model=model or "fake:judge", label_script=script), caller)

    monkeypatch.setattr("reag.llm.registry.make_client", make_client)
    return seen


def _run(cli: typer.Typer, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["judge", *CASE, *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def test_json_shows_each_annotator_and_the_max_of_their_mean(
    cli: typer.Typer, dsn: str, prompts: list[str]
) -> None:
    code, output = _run(
        cli, "--app", "nutrition", "-m", "fake:judge", "--annotators", "3", "--examples", "2",
        "--json",
    )  # fmt: skip
    assert code == 0, output
    out = json.loads(output)
    assert out["model"] == "fake:judge"
    assert [a["YES"] for a in out["annotators"]] == pytest.approx([0.9, 0.2, 0.3])
    assert out["confidence"] == pytest.approx(1.6 / 3)  # not the mean of maxima, 0.8
    assert out["verdict"] == "NO"
    assert out["threshold"] is None
    assert out["accepted"] is False
    assert len(prompts) == 3
    assert len(set(prompts)) == 3  # each annotator shown its own examples
    assert all("Warns about sugar." in p for p in prompts)


def test_without_an_app_one_zero_shot_annotator_judges(
    cli: typer.Typer, prompts: list[str]
) -> None:
    code, output = _run(cli, "-m", "fake:judge", "--annotators", "3", "--json")
    assert code == 0, output
    out = json.loads(output)
    assert len(out["annotators"]) == 1
    assert out["confidence"] == pytest.approx(0.9)
    assert out["verdict"] == "YES"
    assert out["threshold"] is None


def _record(dsn: str, *, value: float, identity: dict[str, Any], **other: Any) -> None:
    """A threshold fitted on the judge ``identity`` names, with ``other`` fields changed."""
    threshold = pb.Threshold(app="nutrition", has_threshold=True, threshold=value)
    JudgeIdentity(**{**identity, **other}).stamp(threshold)
    prompt_version = threshold.prompt_version
    threshold.computed_at.GetCurrentTime()
    CalibrationStore.open(dsn).record_thresholds(
        [threshold], prompt_version=prompt_version, trigger="test"
    )


def test_the_latest_matching_threshold_decides_acceptance(
    cli: typer.Typer, dsn: str, prompts: list[str]
) -> None:
    args = ("--app", "nutrition", "-m", "fake:judge", "--annotators", "3", "--examples", "2")
    identity = json.loads(_run(cli, *args, "--json")[1])["identity"]
    _record(dsn, value=0.9, identity=identity)
    _record(dsn, value=0.5, identity=identity)
    out = json.loads(_run(cli, *args, "--json")[1])
    assert out["threshold"] == pytest.approx(0.5)
    assert out["accepted"] is True
    code, text = _run(cli, *args)
    assert code == 0, text
    assert "verdict NO, confidence 0.533" in text
    assert "accepts" in text


def test_a_threshold_fit_for_another_model_or_prompt_does_not_apply(
    cli: typer.Typer, dsn: str, prompts: list[str]
) -> None:
    args = ("--app", "nutrition", "-m", "fake:judge", "--annotators", "3", "--examples", "2")
    identity = json.loads(_run(cli, *args, "--json")[1])["identity"]
    _record(dsn, value=0.5, identity=identity, model="fake:other")
    out = json.loads(_run(cli, *args, "--json")[1])
    assert out["threshold"] is None
    assert "fake:other" in out["threshold_note"]
    _record(dsn, value=0.5, identity=identity, prompt_version="judge-prompt-v3")
    out = json.loads(_run(cli, *args, "--json")[1])
    assert out["threshold"] is None
    assert "prompt_version: judge-prompt-v3" in out["threshold_note"]
    _record(dsn, value=0.5, identity=identity, n_annotators=5)
    assert "n_annotators" in json.loads(_run(cli, *args, "--json")[1])["threshold_note"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--app", "nowhere"), "no labelled items for app 'nowhere'"),
        (("--tier", "4"), "--tier must be between 1 and 3"),
        (("--annotators", "0"), "annotators"),
        (("--examples", "2"), "give --app"),
    ],
)
def test_bad_input_is_a_clear_error(
    cli: typer.Typer, dsn: str, prompts: list[str], args: tuple[str, ...], message: str
) -> None:
    code, output = _run(cli, "-m", "fake:judge", *args)
    assert code == 2
    assert message in output
    assert prompts == []  # nothing was judged
