"""``reag calibrate`` and ``reag sweep``: conformal thresholds for the judge cascade.

Both read judge scores on expert-labelled items (a JSONL file of
``reag.calibration.ScoreRecord``). ``calibrate --labels`` instead adds a labelled
set to the calibration store, runs each tier's judge on what that tier would
see (stored scores are reused, so no call is ever repeated), records the
thresholds in the store's history and, with ``--publish``, puts them on
``reag.thresholds.v1`` for the running judges.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from reag.fit_defaults import (
    DEFAULT_ALPHA,
    DEFAULT_DELTA,
    DEFAULT_GRID,
    DEFAULT_MIN_ACCEPTED,
    DEFAULT_TAU,
)

if TYPE_CHECKING:
    from reag.calibration import CascadeCalibration, Mode, ScoreRecord
    from reag.calibration_run.fitting import FitSpec
MIN_ACCEPTED_HELP = (
    "Pass over (do not test) candidate thresholds that accept fewer calibration items; "
    "1 passes over only those accepting none."
)


class ModeChoice(StrEnum):
    cascade = "cascade"
    system = "system"
    independent = "independent"


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


def _load(
    scores: Path | None,
    labels: Path | None,
    read_scores: Callable[[Path], Sequence[ScoreRecord]],
) -> Sequence[ScoreRecord]:
    if scores is not None and labels is None:
        return read_scores(scores)
    raise _fail("give exactly one of --scores FILE or --labels FILE")


def _fmt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _table(calibration: CascadeCalibration) -> str:
    tier_delta = calibration.tiers[0].delta if calibration.tiers else calibration.delta
    lines = [
        f"mode {calibration.mode}: α={calibration.alpha:g}, δ={calibration.delta:g} "
        f"(each tier tested at {tier_delta:.4g}), τ={calibration.tau}, "
        f"min accepted {calibration.min_accepted}, {calibration.n_items} items, "
        f"calibration hash {calibration.calibration_hash[:12]}",
        "",
        f"{'tier':<5}{'λ̂':>8}{'n':>7}{'accepted':>10}{'R̂':>8}{'R̂+':>8}{'T':>6}",
    ]
    for t, fit in enumerate(calibration.tiers, start=1):
        lam = "none" if fit.threshold is None else f"{fit.threshold:.3f}"
        lines.append(
            f"{t:<5}{lam:>8}{fit.n:>7}{fit.n_accepted:>10}{_fmt(fit.risk):>8}"
            f"{_fmt(fit.risk_upper):>8}{fit.temperature:>6g}"
        )
    lines.append("")
    lines += [f"tier {t}: {fit.reason}" for t, fit in enumerate(calibration.tiers, start=1)]
    return "\n".join(lines)


def calibrate(
    *,
    scores: Annotated[
        Path | None,
        typer.Option("--scores", help="JSONL of judge scores on expert-labelled items."),
    ] = None,
    labels: Annotated[
        Path | None,
        typer.Option("--labels", help="Expert-labelled set to run the judges on first."),
    ] = None,
    alpha: Annotated[
        float, typer.Option("--alpha", help="Tolerated disagreement rate among accepted verdicts.")
    ] = DEFAULT_ALPHA,
    delta: Annotated[
        float, typer.Option("--delta", help="Allowed probability that the bound fails.")
    ] = DEFAULT_DELTA,
    independent: Annotated[
        bool, typer.Option("--independent", help="Calibrate every tier on every item.")
    ] = False,
    system: Annotated[
        bool,
        typer.Option("--system", help="Split δ across tiers: whole accepted set risk ≤ α."),
    ] = False,
    tau: Annotated[
        int, typer.Option("--tau", help="Temperature-scale a tier accepting fewer items (0: off).")
    ] = DEFAULT_TAU,
    grid: Annotated[
        str, typer.Option("--grid", help="Candidate thresholds START:STOP:STEP.")
    ] = DEFAULT_GRID,
    min_accepted: Annotated[
        int, typer.Option("--min-accepted", min=1, help=MIN_ACCEPTED_HELP)
    ] = DEFAULT_MIN_ACCEPTED,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    app_name: Annotated[
        str | None, typer.Option("--app", help="With --labels: the app, if the file has several.")
    ] = None,
    tier_models: Annotated[
        str | None,
        typer.Option(
            "--tier-models", help="With --labels: M1,M2,M3 cheapest first (else REAG_TIER_MODELS)."
        ),
    ] = None,
    publish: Annotated[
        bool,
        typer.Option(
            "--publish", help="With --labels or --pooled: publish the thresholds to the judges."
        ),
    ] = False,
    stored_scores: Annotated[
        Path | None,
        typer.Option(
            "--stored-scores",
            help="With --labels: a folder of judge scores made beforehand on this set (an "
            "app's calibration_scores); a tier's file is used only after a random sample "
            "judged again matches it.",
        ),
    ] = None,
    pooled: Annotated[
        str | None,
        typer.Option(
            "--pooled",
            help="Day one: give --app, which has no labels, the thresholds fitted on this "
            "app's labelled items, marked provisional until --app's own audits certify or "
            "withdraw them (docs/calibration.md, 'Day one').",
        ),
    ] = None,
) -> None:
    """Fit each tier's confidence threshold λ̂ by fixed-sequence testing (paper 3.4.2)."""
    from reag.calibration import CalibrationError, Grid, read_scores
    from reag.calibration_run.fitting import FitSpec

    if pooled is not None:
        if app_name is None or labels is not None or scores is not None:
            raise _fail("--pooled LENDER goes with --app NEW_APP, without --labels or --scores")
        _borrow(app_name, pooled, publish=publish, as_json=as_json)
        return

    if independent and system:
        raise _fail("--independent and --system are different modes; pick one")
    mode: Mode = "independent" if independent else "system" if system else "cascade"
    try:
        spec = FitSpec(
            alpha=alpha,
            delta=delta,
            mode=mode,
            tau=tau,
            grid=Grid.parse(grid),
            min_accepted=min_accepted,
        )
    except CalibrationError as exc:
        raise _fail(str(exc)) from exc
    if labels is not None and scores is None:
        _calibrate_labels(
            labels,
            spec,
            app=app_name,
            tier_models=tier_models,
            publish=publish,
            as_json=as_json,
            stored_scores=stored_scores,
        )
        return
    if app_name or tier_models or publish or stored_scores:
        raise _fail("--app, --tier-models, --publish and --stored-scores go with --labels")
    try:
        records = _load(scores, labels, read_scores)
        calibration = spec.fit(records)
    except CalibrationError as exc:
        raise _fail(str(exc)) from exc
    if as_json:
        typer.echo(json.dumps(calibration.summary(), indent=2))
    else:
        typer.echo(_table(calibration))


def _borrow(app: str, lender: str, *, publish: bool, as_json: bool) -> None:
    import asyncio

    from reag.calibration import CalibrationError
    from shell.kafka_io.labels import borrow_thresholds_for

    try:
        borrowed, published = asyncio.run(borrow_thresholds_for(app, lender, publish=publish))
    except CalibrationError as exc:
        raise _fail(str(exc)) from exc
    if as_json:
        from google.protobuf.json_format import MessageToDict

        rows = [MessageToDict(t, preserving_proto_field_name=True) for t in borrowed]
        typer.echo(json.dumps({"app": app, "thresholds": rows, "published": published}))
        return
    for t in borrowed:
        lam = f"λ̂={t.threshold:.3f}" if t.has_threshold else "none"
        typer.echo(f"tier {t.tier}: {lam} (provisional, from {lender})")
    typer.echo(borrowed[0].reason if borrowed else "")
    typer.echo(
        f"provisional thresholds recorded for {app!r}"
        + (f" and published ({published})" if publish else "; --publish sends them to judges")
    )


def _calibrate_labels(
    labels: Path,
    spec: FitSpec,
    *,
    app: str | None,
    tier_models: str | None,
    publish: bool,
    as_json: bool,
    stored_scores: Path | None,
) -> None:
    import asyncio

    from reag.calibration import CalibrationError
    from shell.kafka_io.labels import calibrate_from_labels
    from shell.progress import tier_bars

    try:
        with tier_bars(enabled=not as_json) as progress:
            run = asyncio.run(
                calibrate_from_labels(
                    labels,
                    spec,
                    app=app,
                    tier_models=tier_models,
                    publish=publish,
                    progress=progress,
                    stored_scores=stored_scores,
                )
            )
    except CalibrationError as exc:
        raise _fail(str(exc)) from exc
    result = run.result
    if not as_json:
        for report in result.snapshots:
            typer.echo(report.line(), err=True)
    if as_json:
        summary = result.calibration.summary()
        summary |= {
            "app": result.app,
            "models": list(result.models),
            "prompt_version": result.prompt_version,
            "published": run.published,
            "stored_scores": [
                {"tier": r.tier, "file": r.path.name, "used": r.trusted, "imported": r.imported}
                | ({"reason": r.reason} if r.reason else {})
                for r in result.snapshots
            ],
        }
        typer.echo(json.dumps(summary, indent=2))
        return
    typer.echo(_table(result.calibration))
    typer.echo(f"\n{result.stats.line()}")
    typer.echo(result.model_note())
    typer.echo(
        f"thresholds recorded for {result.app!r}"
        + (f" and published ({run.published})" if publish else "; --publish sends them to judges")
    )


def sweep(
    *,
    scores: Annotated[
        Path, typer.Option("--scores", help="JSONL of judge scores to calibrate on.")
    ],
    out: Annotated[Path, typer.Option("--out", help="Folder for sweep.csv, sweep.md, plots.")],
    eval_scores: Annotated[
        Path | None,
        typer.Option("--eval-scores", help="Separate scores to evaluate on (else --split)."),
    ] = None,
    split: Annotated[
        float | None,
        typer.Option("--split", help="Fraction of items to calibrate on [default: 0.5]."),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the split.")] = 0,
    alphas: Annotated[
        str, typer.Option("--alphas", help="START:STOP:STEP (inclusive) or a comma list.")
    ] = "0.10:0.40:0.02",
    tier_costs: Annotated[
        str,
        typer.Option("--tier-costs", help="Relative cost per call of each tier (if no cost_usd)."),
    ] = "1,3,4.6",
    delta: Annotated[float, typer.Option("--delta")] = DEFAULT_DELTA,
    mode: Annotated[ModeChoice, typer.Option("--mode")] = ModeChoice.cascade,
    tau: Annotated[int, typer.Option("--tau")] = DEFAULT_TAU,
    grid: Annotated[str, typer.Option("--grid")] = DEFAULT_GRID,
    min_accepted: Annotated[
        int, typer.Option("--min-accepted", min=1, help=MIN_ACCEPTED_HELP)
    ] = DEFAULT_MIN_ACCEPTED,
) -> None:
    """Coverage, selective agreement and honest cost over α, beside each judge alone."""
    from reag.calibration import CalibrationError, Grid, read_scores
    from reag.calibration.sweep import parse_alphas, parse_tier_costs, run_sweep, split_records
    from reag.calibration.sweep_output import markdown, write_sweep

    if eval_scores is not None and split is not None:
        raise _fail("--eval-scores and --split are alternatives; give one")
    try:
        cal, evaluation = split_records(
            read_scores(scores),
            read_scores(eval_scores) if eval_scores is not None else None,
            fraction=0.5 if split is None else split,
            seed=seed,
        )
        result = run_sweep(
            cal,
            evaluation,
            alphas=parse_alphas(alphas),
            delta=delta,
            mode=mode.value,
            tier_costs=parse_tier_costs(tier_costs),
            tau=tau,
            grid=Grid.parse(grid),
            min_accepted=min_accepted,
        )
    except CalibrationError as exc:
        raise _fail(str(exc)) from exc
    paths = write_sweep(result, out)
    typer.echo(markdown(result))
    typer.echo("wrote " + ", ".join(str(p) for p in paths))


def register(app: typer.Typer) -> None:
    commands: dict[str, Callable[..., Any]] = {"calibrate": calibrate, "sweep": sweep}
    for name, command in commands.items():
        app.command(name)(command)
