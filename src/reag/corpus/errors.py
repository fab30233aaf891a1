"""Errors of corpus ingestion, each naming the file and what to fix."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


class CorpusError(Exception):
    """Base class of every corpus error."""


class CorpusFileError(CorpusError):
    """One file cannot be ingested; ``line`` (or CSV row) is set when known."""

    def __init__(self, path: Path | str, problem: str, *, line: int | None = None) -> None:
        self.path = str(path)
        self.problem = problem
        self.line = line
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {problem}")


class CorpusLoadError(CorpusError):
    """Several files were checked and at least one is bad; nothing was ingested."""

    def __init__(self, errors: Sequence[CorpusFileError]) -> None:
        self.errors = list(errors)
        lines = "\n".join(f"  {e}" for e in self.errors)
        noun = "file has" if len({e.path for e in self.errors}) == 1 else "files have"
        super().__init__(f"nothing was ingested; {noun} problems:\n{lines}")


class DuplicateAddressError(CorpusError):
    """Two documents of one batch claim the same ``<kind>/<id>``."""


class DocumentNotFoundError(CorpusError, KeyError):
    """No document has this address in this app."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "document not found"


class ManifestError(CorpusError):
    """The app manifest is missing, unparseable or lacks a field."""
