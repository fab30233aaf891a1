"""``reag elicit``: simulated users probe the app, their traffic is published; ``reag sample-app``.

``elicit`` is the synthetic half of the elicitor (REAG 3.1): it writes users
within the app's persona categories, sends their queries to the app under
test through the manifest's ``target``, and publishes request and reply to
``reag.traffic.v1``, where they take the same path as live traffic.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from reag.apps import AppConfig
    from reag.corpus.model import Document
    from reag.elicitation.synthetic import FailedProbe, SyntheticCase
    from reag.v1 import events_pb2 as pb

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


def _persona_documents(config: AppConfig) -> list[Document]:
    """From the store, where the services read them; else from the manifest's files, with a note."""
    from reag.corpus.errors import CorpusLoadError
    from reag.corpus.loader import load_sources
    from reag.corpus.store import CorpusStore
    from reag.settings import ReagSettings

    documents = CorpusStore.open(ReagSettings().resolved_store_dsn()).list(
        config.name, kind="persona"
    )
    if documents:
        return documents
    try:
        loaded = load_sources(
            [(config.resolve(e.path), e.kind) for e in config.corpus], config.name
        )
    except CorpusLoadError as exc:
        raise _fail(str(exc), 1) from exc
    typer.echo(
        f"note: app {config.name!r} has no corpus in the store; personas were read from its "
        f"files. The pipeline's services need `reag corpus add --manifest ...` first.",
        err=True,
    )
    return [d for d in loaded if d.kind == "persona"]


def _report(outcome: SyntheticCase | FailedProbe, as_json: bool) -> None:
    from google.protobuf.json_format import MessageToDict

    from reag.elicitation.synthetic import FailedProbe

    if isinstance(outcome, FailedProbe):
        typer.echo(
            f"  #{outcome.index:<3} {outcome.category.id:<22} FAILED  {outcome.error}", err=True
        )
        return
    traffic = outcome.traffic
    if as_json:
        typer.echo(json.dumps(MessageToDict(traffic), ensure_ascii=False))
        return
    query = " ".join(outcome.user.draft.query.split())
    typer.echo(
        f"  {traffic.meta.case_id}  {outcome.user.category.id:<22} "
        f"{traffic.response_latency_s:6.2f}s  {query[:70]}"
    )


async def elicit_and_publish(
    config: AppConfig,
    *,
    count: int,
    seed: int | None,
    model: str | None,
    target_url: str | None,
    bootstrap: str | None,
    topic: str,
    dry_run: bool,
    as_json: bool,
    run_id: str | None = None,
    paraphrase: bool = False,
) -> tuple[list[pb.Traffic], int]:
    """Probe the app with ``count`` simulated users; returns the traffic published and the
    number of failed probes. ``reag demo`` uses it too."""
    from reag.elicitation.personas import categories_from_documents
    from reag.elicitation.synthetic import FailedProbe, new_run_id, simulate
    from reag.elicitation.targets import make_target
    from reag.llm import Caller
    from reag.llm.registry import make_client

    if config.target is None:
        raise _fail(
            f"app {config.name!r} has no 'target:' section in its manifest, so there is "
            "nothing to probe"
        )
    target_config = config.target
    if target_url:
        field = "base_url" if target_config.kind == "openai" else "url"
        target_config = target_config.model_copy(update={field: target_url})
    categories = categories_from_documents(_persona_documents(config))
    if not categories:
        raise _fail(f"app {config.name!r} has no persona documents", 1)
    seeds = config.load_seed_queries()
    if not seeds:
        raise _fail(f"app {config.name!r} lists no seed queries ('seed_queries:' in the manifest)")

    client = make_client(model, caller=Caller(service="elicitor"))
    target = make_target(target_config)
    broker = None
    if not dry_run:
        from services.kit.broker import make_broker
        from services.kit.settings import ServiceSettings

        kafka = ServiceSettings().kafka
        if bootstrap:
            kafka = kafka.model_copy(update={"bootstrap_servers": bootstrap})
        broker = make_broker(kafka, "elicit")
        await broker.connect()
    run_id = run_id or new_run_id()
    typer.echo(f"{run_id}: {count} simulated users of {config.name} -> {target.endpoint}", err=True)
    published: list[pb.Traffic] = []
    failed = 0
    try:
        async for outcome in simulate(
            config,
            categories,
            seeds,
            client,
            target,
            count=count,
            seed=seed,
            run_id=run_id,
            paraphrase=paraphrase,
        ):
            if isinstance(outcome, FailedProbe):
                failed += 1
            elif broker is not None:
                await broker.publish(
                    outcome.traffic.SerializeToString(),
                    topic,
                    key=outcome.traffic.meta.case_id.encode(),
                    headers={"content-type": "application/x-protobuf", "x-reag-type": "Traffic"},
                )
                published.append(outcome.traffic)
            _report(outcome, as_json)
    finally:
        await target.aclose()
        await client.aclose()
        if broker is not None:
            await broker.stop()
    return published, failed


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
    config = _load(app_name, manifest)
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
    verb = "probed (dry run)" if dry_run else f"published to {topic}"
    typer.echo(f"{count - failed} of {count} cases {verb}; {failed} probes failed", err=True)
    if failed == count:
        raise typer.Exit(1)


@sample_app_cli.command("serve")
def serve_sample_app(
    app_manifest: Annotated[Path, typer.Option("--app-manifest", help="The app's app.yaml.")],
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 18081,
    host: Annotated[str, typer.Option("--host", help="Address to bind.")] = "127.0.0.1",
    model: Annotated[
        str | None, typer.Option("--model", help="Model (default: manifest, then REAG_LLM_MODEL).")
    ] = None,
) -> None:
    """Serve the app's system prompt through the configured model at /v1/chat/completions."""
    import uvicorn

    from reag.corpus.errors import ManifestError
    from reag.llm import Caller
    from reag.llm.registry import make_client
    from reag.sampleapp.server import create_sample_app

    config = _load(None, app_manifest)
    try:
        prompt = config.system_prompt()
    except ManifestError as exc:
        raise _fail(str(exc)) from exc
    assert config.sample_app is not None  # system_prompt() checked it
    client = make_client(model or config.sample_app.model, caller=Caller(service="sample-app"))
    app = create_sample_app(
        prompt,
        client,
        served_name=config.sample_app.served_name or config.name,
        temperature=config.sample_app.temperature,
        max_tokens=config.sample_app.max_tokens,
    )
    typer.echo(f"sample app {config.name} on http://{host}:{port}/v1 ({client.model})", err=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")


def register(app: typer.Typer) -> None:
    app.command("elicit")(elicit)
    app.add_typer(sample_app_cli)
