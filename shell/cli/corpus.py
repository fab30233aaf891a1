"""``reag corpus add`` and ``reag corpus list``: an app's requirements corpus in the store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from reag.corpus.errors import CorpusLoadError, ManifestError
from reag.corpus.kinds import parse_kind
from reag.corpus.model import DocumentKind

if TYPE_CHECKING:
    from reag.corpus.manifest import AppManifest
    from reag.traffic.policy import TrafficPolicy

corpus_app = typer.Typer(
    name="corpus",
    help="Ingest and list an app's requirements corpus.",
    no_args_is_help=True,
)


def _store_dsn() -> str:
    from reag.settings import ReagSettings

    return ReagSettings().resolved_store_dsn()


def _kind_option(value: str | None) -> DocumentKind | None:
    if value is None:
        return None
    kind = parse_kind(value)
    if kind is None:
        raise typer.BadParameter(
            f"{value!r} is not a kind; use requirement, user_story, persona, domain_knowledge, "
            "background or nfr"
        )
    return kind


@corpus_app.command("add")
def add(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Corpus files or folders (Markdown, CSV, JSON/YAML, PDF)."),
    ] = None,
    app_name: Annotated[
        str | None,
        typer.Option(
            "--app", help="The app the documents belong to (default: the manifest's name)."
        ),
    ] = None,
    kind: Annotated[
        str | None,
        typer.Option(
            "--kind", help="Kind for files that do not declare one (PDF, untyped Markdown)."
        ),
    ] = None,
    manifest: Annotated[
        Path | None,
        typer.Option("--manifest", help="An app.yaml whose corpus files are added too."),
    ] = None,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict", help="Store nothing if any section, row or document would be skipped."
        ),
    ] = False,
) -> None:
    """Add documents; every file is checked first.

    An empty section or a bad row, section or document is skipped with a warning
    naming it, and the rest is stored. A bad file (missing, unparseable, a bad
    CSV header) stores nothing. Exit 0 when documents were stored, 1 when
    nothing was (a bad file, every part skipped, or a skip under --strict).
    """
    from reag.corpus.loader import read_sources
    from reag.corpus.manifest import load_manifest
    from reag.corpus.store import CorpusStore

    default_kind = _kind_option(kind)
    sources: list[tuple[Path, DocumentKind | None]] = []
    policy: TrafficPolicy | None = None
    if manifest is not None:
        try:
            loaded = load_manifest(manifest)
        except ManifestError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from exc
        if app_name is not None and app_name != loaded.name:
            typer.echo(
                f"error: --app {app_name!r} differs from the manifest's name {loaded.name!r}",
                err=True,
            )
            raise typer.Exit(2)
        app_name = loaded.name
        policy = _traffic_policy(loaded)
        sources.extend(
            (path, entry_kind or default_kind) for path, entry_kind in loaded.corpus_paths()
        )
    sources.extend((path, default_kind) for path in paths or [])
    if not sources:
        typer.echo("error: give corpus files or --manifest", err=True)
        raise typer.Exit(2)
    if app_name is None:
        typer.echo("error: --app is required without --manifest", err=True)
        raise typer.Exit(2)

    try:
        corpus = read_sources(sources, app_name, strict=strict)
    except CorpusLoadError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc

    for part in corpus.skipped:
        typer.echo(f"warning: skipped {part}", err=True)
    documents = corpus.documents
    report = CorpusStore.open(_store_dsn()).add(app_name, documents)
    if policy is not None:
        _store_traffic_policy(policy, app_name)
    skipped = f"; {len(corpus.skipped)} skipped, see the warnings" if corpus.skipped else ""
    typer.echo(
        f"{app_name}: {len(report.added)} added, {len(report.replaced)} replaced, "
        f"{len(report.unchanged)} unchanged ({report.total} documents from "
        f"{len({d.source for d in documents})} files{skipped})"
    )


def _traffic_policy(manifest: AppManifest) -> TrafficPolicy:
    """The manifest's ``traffic:`` section, or the default; checked before anything is stored."""
    from pydantic import ValidationError

    from reag.traffic.policy import TrafficPolicy

    section = (manifest.model_extra or {}).get("traffic")
    try:
        return TrafficPolicy.model_validate(section) if section is not None else TrafficPolicy()
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        typer.echo(f"error: {manifest.name}: traffic.{where}: {first['msg']}", err=True)
        raise typer.Exit(2) from exc


def _store_traffic_policy(policy: TrafficPolicy, app_name: str) -> None:
    """The policy goes beside the corpus, where the ingesting services read it."""
    from reag.traffic.policy import PolicyStore

    PolicyStore.open(_store_dsn()).put(app_name, policy)
    shadow, redaction = policy.shadow, policy.redaction
    kinds = ", ".join([*redaction.recognisers, *redaction.custom])
    typer.echo(
        f"{app_name}: traffic policy stored (redaction {kinds if redaction.enabled else 'OFF'}; "
        f"sample rate {shadow.sample_rate:g} by {shadow.sample_by})"
    )


@corpus_app.command("list")
def list_documents(
    app_name: Annotated[str, typer.Option("--app", help="The app whose corpus to list.")],
    kind: Annotated[str | None, typer.Option("--kind", help="Only this kind.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array, with content.")] = False,
) -> None:
    """List an app's documents by address."""
    from reag.corpus.store import CorpusStore

    documents = CorpusStore.open(_store_dsn()).list(app_name, kind=_kind_option(kind))
    if as_json:
        typer.echo(
            json.dumps(
                [
                    {
                        "address": d.address,
                        "kind": d.kind,
                        "id": d.local_id,
                        "title": d.title,
                        "content": d.content,
                        "source": d.source,
                        "metadata": dict(d.metadata),
                    }
                    for d in documents
                ],
                indent=2,
                ensure_ascii=False,
            )
        )
        return
    if not documents:
        typer.echo(f"app {app_name!r} has no documents; add some with `reag corpus add`", err=True)
        raise typer.Exit(1)
    width = max(len(d.address) for d in documents)
    for document in documents:
        typer.echo(f"{document.address:<{width}}  {document.title}")
    typer.echo(f"{len(documents)} documents", err=True)


def register(app: typer.Typer) -> None:
    app.add_typer(corpus_app)
