"""Errors of corpus ingestion, each naming the file and what to fix."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
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


@dataclass(frozen=True, slots=True)
class SkippedPart:
    """A row, section or document left out while the rest of its file was kept.

    ``problem`` names the part (its heading, subsection or id) and what is wrong
    with it, never its content: a corpus may hold text that should not end up in
    logs or CI output, and the name is what an author needs to find the part.
    """

    path: str
    problem: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.problem}"


class CorpusLoadError(CorpusError):
    """Several files were checked and nothing was ingested: a file is bad, or nothing was left.

    ``skipped`` lists the parts that were left out before the load was refused,
    so a report shows every reason at once.
    """

    def __init__(
        self, errors: Sequence[CorpusFileError], skipped: Sequence[SkippedPart] = ()
    ) -> None:
        self.errors = list(errors)
        self.skipped = list(skipped)
        lines = "\n".join(f"  {e}" for e in self.errors)
        noun = "file has" if len({e.path for e in self.errors}) == 1 else "files have"
        message = f"nothing was ingested; {noun} problems:\n{lines}"
        if self.skipped:
            message += "\nskipped:\n" + "\n".join(f"  {s}" for s in self.skipped)
        super().__init__(message)


class DuplicateAddressError(CorpusError):
    """Two documents of one batch claim the same ``<kind>/<id>``."""


class DocumentNotFoundError(CorpusError, KeyError):
    """No document has this address in this app."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "document not found"


class ManifestError(CorpusError):
    """The app manifest is missing, unparseable or lacks a field."""
