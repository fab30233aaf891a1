"""``reag up`` / ``down`` / ``status`` / ``demo``: the embedded stack on one machine."""

from __future__ import annotations

import asyncio

import typer

from reag.stack import supervisor


def _ensure_topics(bootstrap: str) -> None:
    from services.kit.admin import ensure_topics
    from services.kit.settings import KafkaSettings

    created = asyncio.run(ensure_topics(KafkaSettings(bootstrap_servers=bootstrap)))
    typer.echo(f"  {'topics':<14} {len(created)} created")


def up() -> None:
    """Start the embedded stack (broker, model server, sample app, every service) and return."""
    settings = supervisor.StackSettings()
    typer.echo(f"starting the embedded stack (logs in {settings.state_dir / 'logs'})")
    try:
        state = supervisor.up(settings, after_broker=_ensure_topics, echo=typer.echo)
    except supervisor.StackError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise typer.Exit(1) from exc
    typer.echo(f"\nKafka bootstrap: {state.bootstrap}   model server: {state.model_url}   "
               f"sample app: {state.sample_app_url}")
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


def register(app: typer.Typer) -> None:
    app.command()(up)
    app.command()(down)
    app.command()(status)
