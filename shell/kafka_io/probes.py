"""Simulated users probe the app under test; their traffic goes to ``reag.traffic.v1``.

Shared by ``reag elicit`` and ``reag demo``, so it sits in the shell's Kafka
I/O rather than in either command: the demo must not import the CLI (the CLI
imports the demo). Errors a user can act on are ``ProbeError``; each command
decides how to show them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from reag.apps import AppConfig
    from reag.corpus.model import Document
    from reag.elicitation.synthetic import FailedProbe, SyntheticCase
    from reag.v1 import events_pb2 as pb


class ProbeError(RuntimeError):
    """The app cannot be probed as configured; ``exit_code`` is what a command should exit with."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def persona_documents(config: AppConfig) -> list[Document]:
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
        raise ProbeError(str(exc), 1) from exc
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
        raise ProbeError(
            f"app {config.name!r} has no 'target:' section in its manifest, so there is "
            "nothing to probe"
        )
    target_config = config.target
    if target_url:
        field = "base_url" if target_config.kind == "openai" else "url"
        target_config = target_config.model_copy(update={field: target_url})
    categories = categories_from_documents(persona_documents(config))
    if not categories:
        raise ProbeError(f"app {config.name!r} has no persona documents", 1)
    seeds = config.load_seed_queries()
    if not seeds:
        raise ProbeError(
            f"app {config.name!r} lists no seed queries ('seed_queries:' in the manifest)"
        )

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
