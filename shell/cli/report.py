"""``reag report --html OUT``: one self-contained HTML page for a run.

It reads results the way ``reag results`` does (the ledger's SQL store, or its
gRPC API with ``--api``), so its counts are the ones ``reag results --json``
gives. From the store it also shows each case's response and the documents
its criteria's evidence came from; the API serves results only. ``--scores``
(the JSONL ``reag sweep`` reads) adds the judges' calibration curves and the
α sweep.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from reag.fit_defaults import DEFAULT_DELTA
from shell.cli.results import (
    ApiOption,
    AppOption,
    StoreOption,
    TlsCaOption,
    TlsOption,
    TokenOption,
    list_results,
    open_store,
)

if TYPE_CHECKING:
    from reag.calibration import ScoreRecord
    from reag.calibration.sweep import SweepResult
    from reag.v1 import events_pb2 as pb

RunOption = Annotated[
    str | None,
    typer.Option("--run", "--run-id", help="Only this run's results (default: every run)."),
]


def _read_store(
    dsn: str | None, app: str | None, run_id: str | None
) -> tuple[list[pb.Result], dict[str, pb.Oracle]]:
    store = open_store(dsn)
    try:
        results = store.list_results(app=app, run_id=run_id)
        oracles = {}
        for result in results:
            oracle = store.get_oracle(result.meta.case_id)
            if oracle is not None:
                oracles[result.meta.case_id] = oracle
        return results, oracles
    finally:
        store.close()


def _calibration(
    scores: Path, *, alphas: str, delta: float, tier_costs: str, split: float, seed: int
) -> tuple[list[ScoreRecord], SweepResult]:
    from reag.calibration import CalibrationError, read_scores
    from reag.calibration.sweep import parse_alphas, parse_tier_costs, run_sweep, split_records

    try:
        records = read_scores(scores)
        calibration, evaluation = split_records(records, None, fraction=split, seed=seed)
        sweep = run_sweep(
            calibration,
            evaluation,
            alphas=parse_alphas(alphas),
            delta=delta,
            tier_costs=parse_tier_costs(tier_costs),
        )
    except CalibrationError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    return records, sweep


def report(
    *,
    html: Annotated[Path, typer.Option("--html", help="Write the HTML report to this file.")],
    app_name: AppOption = None,
    run_id: RunOption = None,
    scores: Annotated[
        Path | None,
        typer.Option(
            "--scores",
            help="JSONL of judge scores on expert-labelled items: adds calibration curves "
            "and the α sweep.",
        ),
    ] = None,
    alphas: Annotated[
        str, typer.Option("--alphas", help="With --scores: START:STOP:STEP or a comma list.")
    ] = "0.10:0.40:0.02",
    delta: Annotated[
        float, typer.Option("--delta", help="With --scores: the sweep's δ.")
    ] = DEFAULT_DELTA,
    tier_costs: Annotated[
        str,
        typer.Option("--tier-costs", help="With --scores: relative cost per call of each tier."),
    ] = "1,3,4.6",
    split: Annotated[
        float, typer.Option("--split", help="With --scores: fraction to calibrate on.")
    ] = 0.5,
    seed: Annotated[int, typer.Option("--seed", help="With --scores: seed of the split.")] = 0,
    store_dsn: StoreOption = None,
    api: ApiOption = None,
    token: TokenOption = None,
    tls_ca: TlsCaOption = None,
    tls: TlsOption = False,
) -> None:
    """One self-contained HTML page for a run: outcomes, criteria, tiers, honest cost."""
    from reag.report import ReportInputs, render_run_report

    oracles: dict[str, pb.Oracle] = {}
    if api:
        found = list_results(
            store_dsn=store_dsn,
            api=api,
            token=token,
            tls_ca=tls_ca,
            tls=tls,
            app=app_name,
            run_id=run_id,
        )
    else:
        found, oracles = _read_store(store_dsn, app_name, run_id)
    records: list[ScoreRecord] = []
    sweep = None
    if scores is not None:
        records, sweep = _calibration(
            scores, alphas=alphas, delta=delta, tier_costs=tier_costs, split=split, seed=seed
        )
    scope = " ".join(f"{k} {v}" for k, v in (("app", app_name), ("run", run_id)) if v)
    page = render_run_report(
        ReportInputs(
            results=found,
            title=f"reag report: {scope}" if scope else "reag report",
            app=app_name,
            run_id=run_id,
            oracles=oracles,
            scores=records,
            sweep=sweep,
        )
    )
    html.parent.mkdir(parents=True, exist_ok=True)
    html.write_text(page, encoding="utf-8")
    typer.echo(f"{len(found)} cases; report written to {html}")


def register(app: typer.Typer) -> None:
    app.command("report")(report)
