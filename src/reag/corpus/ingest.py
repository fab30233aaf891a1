"""Load-then-store in one call, for commands and services that set up an app's corpus."""

from __future__ import annotations

from pathlib import Path

from reag.corpus.manifest import load_manifest
from reag.corpus.store import AddReport, CorpusStore


def ingest_manifest(manifest_path: Path, store: CorpusStore) -> AddReport:
    """Adds every corpus file the manifest lists; skipped parts are logged as warnings.

    Raises ``ManifestError`` or ``CorpusLoadError`` (a bad file, or nothing
    left to ingest) before touching the store.
    """
    manifest = load_manifest(manifest_path)
    return store.add(manifest.name, manifest.load_documents())
