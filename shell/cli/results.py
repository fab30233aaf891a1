"""``reag results`` (list, detail, JSON, Markdown report) and ``reag gate`` (CI exit code).

Both read the ledger's SQL store directly (``REAG_STORE_DSN``, or SQLite under
``REAG_STATE_DIR``), so they work with no service running: a CI job can point
``--store`` at the production database and gate a run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from reag.ledger.store import LedgerStore

AppOption = Annotated[
    str | None, typer.Option("--app", help="Only this app's results (default: every app).")
]
RunOption = Annotated[
    str | None, typer.Option("--run-id", help="Only this run's results (default: every run).")
]
StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store", help="SQLAlchemy URL of the store (default: REAG_STORE_DSN or the SQLite file)."
    ),
]


def _open_store(dsn: str | None) -> LedgerStore:
    from reag.ledger.store import LedgerStore
    from reag.settings import ReagSettings

    return LedgerStore.open(dsn or ReagSettings().resolved_store_dsn())


def results(
    *,
    app_name: AppOption = None,
    run_id: RunOption = None,
    outcome: Annotated[
        str | None,
        typer.Option("--outcome", help="Only PASS, FAIL, ABSTAIN or PENDING cases."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print a JSON list of results (reag.v1.Result).")
    ] = False,
    detail: Annotated[
        bool, typer.Option("--detail", help="Show every criterion and each tier's attempt.")
    ] = False,
    markdown: Annotated[
        Path | None,
        typer.Option("--markdown", help="Also write a Markdown report (summary, tiers, cost)."),
    ] = None,
    store_dsn: StoreOption = None,
) -> None:
    """List test case results: outcome, criteria decided, open criteria, tiers, honest cost."""
    from reag.ledger.report import (
        format_summary,
        format_table,
        markdown_report,
        result_to_dict,
    )
    from reag.ledger.summary import UnknownOutcomeError, parse_outcome, summarize

    try:
        wanted = parse_outcome(outcome) if outcome else None
    except UnknownOutcomeError as exc:
        raise typer.BadParameter(str(exc), param_hint="--outcome") from exc
    store = _open_store(store_dsn)
    try:
        found = store.list_results(app=app_name, run_id=run_id, outcome=wanted)
    finally:
        store.close()
    if markdown is not None:
        scope = " ".join(f"{k} {v}" for k, v in (("app", app_name), ("run", run_id)) if v)
        title = f"reag results: {scope}" if scope else "reag results"
        markdown.parent.mkdir(parents=True, exist_ok=True)
        markdown.write_text(markdown_report(found, title=title), encoding="utf-8")
    if as_json:
        typer.echo(json.dumps([result_to_dict(r) for r in found], indent=2))
        return
    typer.echo(format_table(found, detail=detail))
    if found:
        typer.echo("")
        typer.echo(format_summary(summarize(found)))
    if markdown is not None:
        typer.echo(f"report written to {markdown}")


def gate(
    *,
    max_fail_rate: Annotated[
        float, typer.Option("--max-fail-rate", help="Largest acceptable share of FAIL cases.")
    ],
    max_abstain_rate: Annotated[
        float,
        typer.Option(
            "--max-abstain-rate",
            help="Largest acceptable share of ABSTAIN cases (pending cases count as abstained).",
        ),
    ],
    app_name: AppOption = None,
    run_id: RunOption = None,
    store_dsn: StoreOption = None,
) -> None:
    """Exit 1 when the run's fail or abstain rate exceeds its limit, 0 otherwise (2: no results)."""
    from reag.ledger.gate import InvalidRateError, NoResultsError, evaluate_gate

    store = _open_store(store_dsn)
    try:
        found = store.list_results(app=app_name, run_id=run_id)
    finally:
        store.close()
    scope = ", ".join(f"{k} {v!r}" for k, v in (("app", app_name), ("run", run_id)) if v)
    try:
        report = evaluate_gate(
            found,
            max_fail_rate=max_fail_rate,
            max_abstain_rate=max_abstain_rate,
            scope=scope or "any app and run",
        )
    except InvalidRateError as exc:
        raise typer.BadParameter(str(exc)) from exc
    except NoResultsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    typer.echo(
        f"{report.cases} cases: fail rate {report.fail_rate:.3f} "
        f"(max {report.max_fail_rate:.3f}), abstain rate {report.abstain_rate:.3f} "
        f"(max {report.max_abstain_rate:.3f}; {report.pending} pending counted as abstained)"
    )
    if not report.passed:
        for breach in report.breaches:
            typer.echo(f"GATE FAILED: {breach}")
        raise typer.Exit(1)
    typer.echo("GATE PASSED")


def register(app: typer.Typer) -> None:
    app.command("results")(results)
    app.command("gate")(gate)
