"""``reag results`` and ``reag gate`` against a filled SQLite store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from reag.ledger.gate import InvalidRateError, NoResultsError, evaluate_gate
from reag.ledger.store import LedgerStore
from reag.v1 import events_pb2 as pb
from shell.cli import results as results_cli

from .conftest import NO, TIER_COSTS, YES, Events

runner = CliRunner()


@pytest.fixture
def cli() -> typer.Typer:
    app = typer.Typer()
    results_cli.register(app)
    return app


@pytest.fixture
def dsn(sqlite_dsn: str) -> str:
    """Run r1: 10 cases, 1 FAIL, 2 ABSTAIN, 1 pending, 6 PASS. Run r2: 1 PASS (other app)."""
    store = LedgerStore.open(sqlite_dsn)
    for n in range(10):
        ev = Events(f"nutrition-{n:02d}", run_id="r1", n=2)
        store.record_verdict(ev.verdict(0, YES, tier=2))
        if n == 0:
            store.record_verdict(ev.verdict(1, NO, tier=3))
        elif n in (1, 2):
            store.record_abstain(ev.abstain(1))
        elif n == 3:
            continue  # pending: the second criterion never arrived
        else:
            store.record_verdict(ev.verdict(1, YES))
    other = Events("fitness-00", app="fitness", run_id="r2", n=1)
    store.record_verdict(other.verdict(0, YES))
    store.close()
    return sqlite_dsn


@pytest.mark.parametrize(
    ("fail", "abstain", "code"),
    [
        (0.1, 0.3, 0),  # 1/10 failed, 3/10 abstained or pending: at the limits passes
        (0.09, 0.3, 1),
        (0.1, 0.29, 1),
        (0.0, 0.0, 1),
        (1.0, 1.0, 0),
    ],
)
def test_gate_exit_code_follows_the_limits(
    cli: typer.Typer, dsn: str, fail: float, abstain: float, code: int
) -> None:
    out = runner.invoke(
        cli,
        [
            "gate",
            "--max-fail-rate",
            str(fail),
            "--max-abstain-rate",
            str(abstain),
            "--run-id",
            "r1",
            "--store",
            dsn,
        ],
    )
    assert out.exit_code == code, out.output
    assert "fail rate 0.100" in out.output
    assert "abstain rate 0.300" in out.output
    assert ("GATE PASSED" in out.output) is (code == 0)


def test_gate_without_results_exits_2_and_says_why(cli: typer.Typer, dsn: str) -> None:
    out = runner.invoke(
        cli,
        [
            "gate",
            "--max-fail-rate",
            "0.1",
            "--max-abstain-rate",
            "0.1",
            "--run-id",
            "nope",
            "--store",
            dsn,
        ],
    )
    assert out.exit_code == 2
    assert "no results" in out.output


def test_gate_rejects_a_rate_outside_zero_one(cli: typer.Typer, dsn: str) -> None:
    out = runner.invoke(
        cli, ["gate", "--max-fail-rate", "10", "--max-abstain-rate", "0.1", "--store", dsn]
    )
    assert out.exit_code == 2
    assert "between 0 and 1" in out.output


def test_gate_rules_directly() -> None:
    ev = Events(n=1)
    passing = pb.Result(outcome=pb.OUTCOME_PASS)
    failing = pb.Result(outcome=pb.OUTCOME_FAIL)
    pending = pb.Result(outcome=pb.OUTCOME_UNSPECIFIED, meta=ev.meta())
    report = evaluate_gate(
        [passing, failing, pending, passing], max_fail_rate=0.25, max_abstain_rate=0.2
    )
    assert (report.fail_rate, report.abstain_rate, report.pending) == (0.25, 0.25, 1)
    assert len(report.breaches) == 1
    assert "abstain rate" in report.breaches[0]
    with pytest.raises(NoResultsError):
        evaluate_gate([], max_fail_rate=0.1, max_abstain_rate=0.1)
    with pytest.raises(InvalidRateError):
        evaluate_gate([passing], max_fail_rate=-0.1, max_abstain_rate=0.1)


def test_results_table_filters_and_summarises(cli: typer.Typer, dsn: str) -> None:
    out = runner.invoke(cli, ["results", "--app", "nutrition", "--store", dsn])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0].split() == [
        "CASE",
        "APP",
        "RUN",
        "OUTCOME",
        "DECIDED",
        "OPEN",
        "TIERS",
        "COST_USD",
    ]
    row = lines[1].split()
    assert row[:5] == ["nutrition-00", "nutrition", "r1", "FAIL", "2/2"]
    assert row[6] == "1,2,3"
    assert float(row[7]) == pytest.approx(TIER_COSTS[0] + TIER_COSTS[1] + sum(TIER_COSTS))
    assert "fitness-00" not in out.output
    assert "10 cases: 6 PASS, 1 FAIL, 2 ABSTAIN, 1 pending" in out.output


def test_results_detail_shows_each_criterion_and_tier(cli: typer.Typer, dsn: str) -> None:
    out = runner.invoke(cli, ["results", "--outcome", "abstain", "--detail", "--store", dsn])
    assert out.exit_code == 0, out.output
    assert "nutrition-01/c1  -    tier 3" in out.output
    assert "abstained, awaiting review" in out.output
    assert "· tier 2 model-2: NO conf 0.800 threshold 0.900" in out.output
    assert "nutrition-00" not in out.output


def test_results_json_is_a_list_of_results(cli: typer.Typer, dsn: str) -> None:
    out = runner.invoke(cli, ["results", "--json", "--run-id", "r2", "--store", dsn])
    assert out.exit_code == 0, out.output
    listed = json.loads(out.output)
    assert [r["meta"]["case_id"] for r in listed] == ["fitness-00"]
    assert listed[0]["outcome"] == "OUTCOME_PASS"
    assert listed[0]["criteria"][0]["history"][0]["tier"] == 1


def test_results_unknown_outcome_is_refused(cli: typer.Typer, dsn: str) -> None:
    out = runner.invoke(cli, ["results", "--outcome", "maybe", "--store", dsn])
    assert out.exit_code == 2
    assert "not an outcome" in out.output


def test_markdown_report_states_honest_cost_and_tiers(
    cli: typer.Typer, dsn: str, tmp_path: Path
) -> None:
    report = tmp_path / "out" / "report.md"
    out = runner.invoke(
        cli, ["results", "--run-id", "r1", "--markdown", str(report), "--store", dsn]
    )
    assert out.exit_code == 0, out.output
    text = report.read_text()
    assert "| 10 | 6 | 1 | 2 | 1 | 19 | 17 | 0 | 89.5% |" in text
    # every first criterion went to tier 2; six second ones stopped at tier 1, three went to 3
    honest = 10 * (TIER_COSTS[0] + TIER_COSTS[1]) + 6 * TIER_COSTS[0] + 3 * sum(TIER_COSTS)
    deciding = 10 * TIER_COSTS[1] + 6 * TIER_COSTS[0] + 3 * TIER_COSTS[2]
    assert f"Total: **${honest:.6f}**" in text
    assert f"would report ${deciding:.6f}" in text
    assert "| 1 | 19 | 6 | 13 | 0 | 31.6% |" in text
    assert "| 3 | 3 | 1 | 0 | 2 | 33.3% |" in text
    assert "`nutrition-01/c1` (ABSTAIN, abstained, awaiting review)" in text
