"""An app's software artefacts: typed, addressable documents, loaded from files and stored.

Formats: Markdown, CSV (``section,subsection,content``), JSON/YAML and PDF.
See docs/retrieval.md for the rules each format follows.
"""

from reag.corpus.errors import (
    CorpusError,
    CorpusFileError,
    CorpusLoadError,
    DocumentNotFoundError,
    DuplicateAddressError,
    ManifestError,
    SkippedPart,
)
from reag.corpus.ingest import ingest_manifest
from reag.corpus.kinds import kind_from_filename, kind_from_section, parse_kind
from reag.corpus.loader import load_file, load_paths, load_sources, read_file, read_sources
from reag.corpus.manifest import AppManifest, load_manifest
from reag.corpus.model import KINDS, CorpusLoad, Document, DocumentKind, corpus_version
from reag.corpus.store import AddReport, CorpusStore

__all__ = [
    "KINDS",
    "AddReport",
    "AppManifest",
    "CorpusError",
    "CorpusFileError",
    "CorpusLoad",
    "CorpusLoadError",
    "CorpusStore",
    "Document",
    "DocumentKind",
    "DocumentNotFoundError",
    "DuplicateAddressError",
    "ManifestError",
    "SkippedPart",
    "corpus_version",
    "ingest_manifest",
    "kind_from_filename",
    "kind_from_section",
    "load_file",
    "load_manifest",
    "load_paths",
    "load_sources",
    "parse_kind",
    "read_file",
    "read_sources",
]
