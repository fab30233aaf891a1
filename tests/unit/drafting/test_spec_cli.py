from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from reag.drafting.template import load_template
from reag.llm.client import LLMClient
from reag.llm.scripted import FakeProvider
from shell.cli.spec import register, title_of

BRIEF = "# Project brief: NutriLens (illustrative)\n\nA phone app that rates food labels.\n"


@pytest.fixture
def app() -> typer.Typer:
    root = typer.Typer()
    register(root)
    root.command("noop")(lambda: None)  # a second command keeps "spec" a subcommand
    return root


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch, fakes: Any) -> FakeProvider:
    provider = FakeProvider(chat_script=fakes.routing_script())
    monkeypatch.setattr(
        "reag.drafting.clients._registry_client", lambda _model: LLMClient(provider)
    )
    return provider


def test_draft_writes_markdown_corpus_csv_and_run_log(
    app: typer.Typer, scripted: FakeProvider, tmp_path: Path
) -> None:
    brief = tmp_path / "brief.md"
    brief.write_text(BRIEF, encoding="utf-8")
    out = tmp_path / "out" / "srs.md"
    result = CliRunner().invoke(
        app, ["spec", "draft", "--brief", str(brief), "--out", str(out), "--mode", "self-refine"]
    )
    assert result.exit_code == 0, result.output
    markdown = out.read_text(encoding="utf-8")
    assert markdown.startswith("# Software Requirements Specification: NutriLens (illustrative)")
    with (tmp_path / "out" / "srs.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["section", "subsection", "content"]
    assert len(rows) == len(load_template("ieee830").leaves())
    log = json.loads((tmp_path / "out" / "srs.runlog.json").read_text(encoding="utf-8"))
    assert set(log["per_agent"]) == {
        "orchestrator",
        "interviewer",
        "stakeholder",
        "generator",
        "refactor",
    }
    assert log["mode"] == "self-refine"
    assert log["run"]["calls"] == len(scripted.calls)
    assert log["agents"]["refactor"]["temperature"] == 0.2
    assert "output tok" in result.output  # the per-agent accounting table


def test_human_feedback_typed_at_the_prompt_reaches_the_refactor_agent(
    app: typer.Typer, scripted: FakeProvider, tmp_path: Path
) -> None:
    brief = tmp_path / "brief.md"
    brief.write_text(BRIEF, encoding="utf-8")
    out = tmp_path / "srs.md"
    result = CliRunner().invoke(
        app,
        [
            "spec",
            "draft",
            "--brief",
            str(brief),
            "--out",
            str(out),
            "--template",
            "ieee29148",
            "--mode",
            "human-feedback",
            "--rounds",
            "1",
        ],
        input="Add the 3 second limit\nList allergens\n\n",
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "srs.round1-draft.md").is_file()
    refactor_prompts = [
        c.payload[1].content
        for c in scripted.calls
        if "<untrusted_draft_srs>" in c.payload[-1].content
    ]
    assert len(refactor_prompts) == 1
    assert "- Add the 3 second limit\n- List allergens" in refactor_prompts[0]


def test_feedback_file_without_points_stops_before_any_model_call(
    app: typer.Typer, scripted: FakeProvider, tmp_path: Path
) -> None:
    brief = tmp_path / "brief.md"
    brief.write_text(BRIEF, encoding="utf-8")
    feedback = tmp_path / "fb.md"
    feedback.write_text("\n", encoding="utf-8")
    result = CliRunner().invoke(
        app,
        [
            "spec",
            "draft",
            "--brief",
            str(brief),
            "--out",
            str(tmp_path / "s.md"),
            "--mode",
            "human-feedback",
            "--feedback",
            str(feedback),
        ],
    )
    assert result.exit_code == 2
    assert "no bullet points" in result.output
    assert scripted.calls == []


def test_eval_prints_json_with_settings_per_metric(
    app: typer.Typer, scripted: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reag.drafting.metrics import Bleu1, RougeL

    monkeypatch.setattr("reag.drafting.metrics.default_metrics", lambda: [RougeL(), Bleu1()])
    gen = tmp_path / "g.md"
    gen.write_text("## 1 Intro\n\nThe app rates sugar.\n", encoding="utf-8")
    ref = tmp_path / "r.md"
    ref.write_text("## 1 Intro\n\nThe app rates sugar and salt.\n", encoding="utf-8")
    result = CliRunner().invoke(
        app, ["spec", "eval", "--generated", str(gen), "--reference", str(ref), "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert 0 < report["document"]["rouge_l"]["value"] < 1
    assert report["document"]["bleu_1"]["settings"]["max_ngram_order"] == 1
    assert report["sections"][0]["number"] == "1"
    assert report["judge"]["value"] == 2
    assert "completeness" in report["judge"]["rubric"]


def test_eval_names_an_unreadable_file(app: typer.Typer, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "spec",
            "eval",
            "--generated",
            str(tmp_path / "nope.md"),
            "--reference",
            str(tmp_path / "nope.md"),
            "--no-judge",
        ],
    )
    assert result.exit_code == 2
    assert "nope.md" in result.output


def test_title_comes_from_the_briefs_heading() -> None:
    assert title_of(BRIEF, "brief") == "NutriLens (illustrative)"
    assert title_of("no heading here", "brief") == "brief"
