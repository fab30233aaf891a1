"""``reag traffic send --dry-run --json``: the report of what would be sent, after redaction,
with bad rows reported by line and no PII anywhere in the output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from reag.ids import case_id_for
from shell.cli.traffic import register

EMAIL = "jane.doe@example.com"


@pytest.fixture
def cli() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


def log(tmp_path: Path) -> Path:
    rows = [
        {
            "input": {"question": f"Is cola OK? Write to {EMAIL}"},
            "output": {"text": "Not on your diet."},
            "user": {"id": "u-1"},
            "meta": {"diet": "renal", "name": "Jane"},
            "rid": "r-1",
        },
        {"input": {"question": f"{EMAIL} asks again"}, "user": {"id": "u-2"}},  # no response
    ]
    lines = [json.dumps(r) for r in rows] + ['{"input": oops']
    path = tmp_path / "traffic.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


ARGS = [
    "--map",
    "query=input.question",
    "--map",
    "response=output.text",
    "--map",
    "user_id=user.id",
    "--map",
    "request_id=rid",
    "--map",
    "profile.diet=meta.diet",
    "--map",
    "profile.name=meta.name",
]


def test_dry_run_json_reports_events_after_redaction_and_bad_rows_by_line(
    cli: typer.Typer, tmp_path: Path
) -> None:
    result = CliRunner().invoke(
        cli,
        ["traffic", "send", str(log(tmp_path)), "--app", "nutrition", *ARGS, "--dry-run", "--json"],
    )
    assert result.exit_code == 1, result.output  # some rows were invalid
    assert EMAIL not in result.output
    assert "jane.doe" not in result.output
    report = json.loads(result.stdout)
    assert sorted(report) == ["errors", "events", "invalid", "valid"]
    assert (report["valid"], report["invalid"]) == (1, 2)
    assert report["errors"] == [
        {"line": 2, "reason": "no response at 'output.text'"},
        {"line": 3, "reason": "not JSON: Expecting value (column 11)"},
    ]
    [event] = report["events"]
    assert event["query"] == "Is cola OK? Write to [REDACTED:EMAIL]"
    assert event["actualResponse"] == "Not on your diet."
    assert event["meta"]["caseId"] == case_id_for("nutrition", "r-1")
    assert event["meta"]["origin"] == "ORIGIN_LIVE"
    assert event["profile"]["attributes"] == {"diet": "renal", "name": "Jane"}


def test_the_manifest_traffic_policy_decides_what_is_redacted(
    cli: typer.Typer, tmp_path: Path
) -> None:
    (tmp_path / "req.md").write_text("# R1\nThe app answers.\n", encoding="utf-8")
    manifest = tmp_path / "app.yaml"
    manifest.write_text(
        "name: nutrition\ncorpus: [req.md]\n"
        "traffic:\n  redaction:\n    allow_attributes: [diet]\n"
        "    custom: {MEMBER: 'M-\\d{6}'}\n",
        encoding="utf-8",
    )
    path = tmp_path / "one.jsonl"
    path.write_text(
        json.dumps(
            {
                "input": {"question": f"member M-123456, {EMAIL}"},
                "output": {"text": "ok"},
                "meta": {"diet": "renal", "name": "Jane"},
            }
        )
        + "\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(
        cli,
        ["traffic", "send", str(path), "--manifest", str(manifest), *ARGS, "--dry-run", "--json"],
    )
    assert result.exit_code == 0, result.output
    [event] = json.loads(result.stdout)["events"]
    assert event["meta"]["app"] == "nutrition"
    assert event["query"] == "member [REDACTED:MEMBER], [REDACTED:EMAIL]"
    assert event["profile"]["attributes"] == {"diet": "renal"}  # name is not allowed


def test_unusable_options_exit_2_with_the_fix(cli: typer.Typer, tmp_path: Path) -> None:
    path = log(tmp_path)
    runner = CliRunner()
    no_app = runner.invoke(cli, ["traffic", "send", str(path), "--dry-run"])
    assert no_app.exit_code == 2
    assert "--app" in no_app.output
    bad_map = runner.invoke(cli, ["traffic", "send", str(path), "--app", "a", "--map", "answer=x"])
    assert bad_map.exit_code == 2
    assert "unknown field 'answer'" in bad_map.output
    other = tmp_path / "traffic.txt"
    other.write_text("", encoding="utf-8")
    no_format = runner.invoke(cli, ["traffic", "send", str(other), "--app", "a", "--dry-run"])
    assert no_format.exit_code == 2
    assert "--format" in no_format.output
