"""``reag up`` / ``down`` / ``status`` / ``demo``: the embedded stack on one machine."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from reag.fit_defaults import DEFAULT_DELTA, LOCAL_ALPHA
from shell.kafka_io.topics import ensure_topics_at
from shell.stack import supervisor


def up() -> None:
    """Start the embedded stack (broker, model server, sample app, every service) and return."""
    settings = supervisor.StackSettings()
    typer.echo(f"starting the embedded stack (logs in {settings.state_dir / 'logs'})")
    try:
        state = supervisor.up(settings, after_broker=ensure_topics_at, echo=typer.echo)
    except supervisor.StackError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise typer.Exit(1) from exc
    typer.echo(
        f"\nKafka bootstrap: {state.bootstrap}   model server: {state.model_url}   "
        f"sample app: {state.sample_app_url}"
    )
    typer.echo("`reag status` shows health; `reag down` stops everything.")


def down() -> None:
    """Stop every process `reag up` started."""
    stopped = supervisor.down(supervisor.StackSettings(), echo=typer.echo)
    typer.echo(f"stopped {stopped} process(es)" if stopped else "nothing was running")


def status() -> None:
    """List the stack's processes with their health."""
    rows = supervisor.status(supervisor.StackSettings())
    if not rows:
        typer.echo("no stack is running (`reag up` starts one)")
        raise typer.Exit(1)
    typer.echo(f"{'process':<14} {'pid':>7} {'port':>6}  health")
    for row in rows:
        health = "healthy" if row.healthy else ("running, not ready" if row.alive else "DEAD")
        typer.echo(f"{row.name:<14} {row.pid:>7} {row.port:>6}  {health}")
    if not all(r.healthy for r in rows):
        raise typer.Exit(1)


def demo(  # noqa: PLR0917 - typer maps each option to one parameter
    cases: Annotated[
        int | None,
        typer.Option("--cases", "-n", min=1, help="Simulated users.", show_default="1"),
    ] = None,
    manifest: Annotated[Path, typer.Option("--manifest", help="The app to test.")] = Path(
        "examples/nutrition/app.yaml"
    ),
    seed: Annotated[int, typer.Option("--seed", help="Fixes the simulated users.")] = 7,
    alpha: Annotated[
        float | None,
        typer.Option(
            "--alpha",
            help="Risk tolerance α (the local cascade meets 0.30 on the example; hosted 0.15).",
            show_default=str(LOCAL_ALPHA),
        ),
    ] = None,
    delta: Annotated[float, typer.Option("--delta", help="Failure probability δ.")] = DEFAULT_DELTA,
    timeout_s: Annotated[
        float, typer.Option("--timeout", help="Seconds to wait for the cases.")
    ] = 3600.0,
    keep: Annotated[bool, typer.Option("--keep", help="Leave the stack running.")] = False,
) -> None:
    """Run reag end to end on the embedded stack: calibrate, probe the sample app, judge."""
    from shell.demo import DemoOptions, run_demo

    options = DemoOptions(manifest=manifest, seed=seed, delta=delta, timeout_s=timeout_s, keep=keep)
    if cases is not None:
        options.cases = cases
    if alpha is not None:
        options.alpha = alpha
    try:
        code = asyncio.run(run_demo(options, echo=typer.echo))
    except supervisor.StackError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise typer.Exit(1) from exc
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command()(demo)
    app.command()(up)
    app.command()(down)
    app.command()(status)
