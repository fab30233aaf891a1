"""``reag elicit``: simulated users probe the app, their traffic is published; ``reag sample-app``.

``elicit`` is the synthetic half of the elicitor (REAG 3.1): it writes users
within the app's persona categories, sends their queries to the app under
test through the manifest's ``target``, and publishes request and reply to
``reag.traffic.v1``, where they take the same path as live traffic.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from reag.apps import AppConfig

sample_app_cli = typer.Typer(
    name="sample-app", help="The example LLM app under test.", no_args_is_help=True
)


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _load(app_name: str | None, manifest: Path | None) -> AppConfig:
    from reag.apps import find_manifest, load_app
    from reag.corpus.errors import ManifestError

    try:
        if manifest is None:
            if app_name is None:
                raise ManifestError("give --app or --manifest")
            manifest = find_manifest(app_name)
        config = load_app(manifest)
    except ManifestError as exc:
        raise _fail(str(exc)) from exc
    if app_name is not None and app_name != config.name:
        raise _fail(f"--app {app_name!r} differs from the manifest's name {config.name!r}")
    return config


def elicit(  # noqa: PLR0917 - typer maps each option to one parameter
    app_name: Annotated[str | None, typer.Option("--app", help="The app to probe.")] = None,
    count: Annotated[int, typer.Option("--count", "-n", min=1, help="Simulated users.")] = 5,
    seed: Annotated[int | None, typer.Option("--seed", help="Fixes the sampling.")] = None,
    bootstrap: Annotated[
        str | None, typer.Option("--bootstrap", help="Kafka bootstrap servers.")
    ] = None,
    manifest: Annotated[
        Path | None, typer.Option("--manifest", help="app.yaml (default: apps/ or examples/).")
    ] = None,
    target_url: Annotated[
        str | None, typer.Option("--target-url", help="Override the target's base URL / URL.")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="Model of the simulated users.")
    ] = None,
    topic: Annotated[str, typer.Option("--topic", help="Where traffic goes.")] = "reag.traffic.v1",
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Probe the app but publish nothing.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print each traffic event as JSON.")
    ] = False,
    paraphrase: Annotated[
        bool,
        typer.Option(
            "--paraphrase",
            help="Let the agent rewrite the real query in the user's voice (default: send it "
            "as it is, with a generated profile and situation, as the REAG paper does).",
        ),
    ] = False,
) -> None:
    """Simulated users probe the app under test; their traffic enters the pipeline."""
    from shell.kafka_io.probes import ProbeError, elicit_and_publish

    config = _load(app_name, manifest)
    try:
        _, failed = asyncio.run(
            elicit_and_publish(
                config,
                count=count,
                seed=seed,
                model=model,
                target_url=target_url,
                bootstrap=bootstrap,
                topic=topic,
                dry_run=dry_run,
                as_json=as_json,
                paraphrase=paraphrase,
            )
        )
    except ProbeError as exc:
        raise _fail(str(exc), exc.exit_code) from exc
    verb = "probed (dry run)" if dry_run else f"published to {topic}"
    typer.echo(f"{count - failed} of {count} cases {verb}; {failed} probes failed", err=True)
    if failed == count:
        raise typer.Exit(1)


@sample_app_cli.command("serve")
def serve_sample_app(  # noqa: PLR0917 - typer maps each option to one parameter
    app_manifest: Annotated[Path, typer.Option("--app-manifest", help="The app's app.yaml.")],
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 18081,
    host: Annotated[str, typer.Option("--host", help="Address to bind.")] = "127.0.0.1",
    model: Annotated[
        str | None, typer.Option("--model", help="Model (default: manifest, then REAG_LLM_MODEL).")
    ] = None,
    record_to: Annotated[
        str | None,
        typer.Option(
            "--record-to",
            envvar="REAG_SAMPLE_APP_RECORD_BOOTSTRAP",
            help="Kafka bootstrap servers: record the app's own traffic there with reag.client, "
            "as a production app would (off by default: the elicitor publishes its probes).",
        ),
    ] = None,
    record_topic: Annotated[
        str, typer.Option("--record-topic", help="Where recorded traffic goes.")
    ] = "reag.traffic.v1",
) -> None:
    """Serve the app's system prompt through the configured model at /v1/chat/completions."""
    import uvicorn

    from reag.corpus.errors import ManifestError
    from reag.llm import Caller
    from reag.llm.registry import make_client
    from shell.sampleapp.server import create_sample_app

    config = _load(None, app_manifest)
    try:
        prompt = config.system_prompt()
    except ManifestError as exc:
        raise _fail(str(exc)) from exc
    assert config.sample_app is not None  # system_prompt() checked it
    client = make_client(model or config.sample_app.model, caller=Caller(service="sample-app"))
    recorder = None
    if record_to:
        from reag.client import Recorder

        recorder = Recorder(
            bootstrap_servers=record_to,
            app=config.name,
            topic=record_topic,
            redaction=config.traffic_policy().redaction,
            target=f"http://{host}:{port}/v1",
            client_id="reag-sample-app",
        )
    app = create_sample_app(
        prompt,
        client,
        served_name=config.sample_app.served_name or config.name,
        temperature=config.sample_app.temperature,
        max_tokens=config.sample_app.max_tokens,
        recorder=recorder,
    )
    typer.echo(f"sample app {config.name} on http://{host}:{port}/v1 ({client.model})", err=True)
    if recorder is not None:
        typer.echo(f"  recording its traffic to {record_topic} at {record_to}", err=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")


def register(app: typer.Typer) -> None:
    app.command("elicit")(elicit)
    app.add_typer(sample_app_cli)
