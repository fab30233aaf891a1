"""Reading corpus files of every supported format: a bad part costs that part, a bad file all.

Every file is parsed before anything is stored. A part of a file that cannot
become a document (an empty section, a malformed row, a document without
content, a second definition of an address) is skipped and reported, and the
rest of the file is kept: real SRS exports have empty sections and the odd bad
row, and refusing a whole export for one of them leaves the app with no
corpus at all. A problem with a file itself (missing, unsupported, not UTF-8,
unparseable, a bad CSV header, another app's file) still refuses the whole
load, because then a whole set of documents would be missing without anyone
noticing; so does a load that leaves no document at all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from reag.corpus.errors import CorpusFileError, CorpusLoadError, SkippedPart
from reag.corpus.markdown import load_markdown
from reag.corpus.model import CorpusLoad, Document, DocumentKind
from reag.corpus.pdf import load_pdf
from reag.corpus.structured import load_structured
from reag.corpus.tabular import load_csv

log = logging.getLogger("reag.corpus")

FileLoader = Callable[..., CorpusLoad]

LOADERS: dict[str, FileLoader] = {
    ".md": load_markdown,
    ".markdown": load_markdown,
    ".csv": load_csv,
    ".json": load_structured,
    ".yaml": load_structured,
    ".yml": load_structured,
    ".pdf": load_pdf,
}


def read_file(path: Path, app: str, *, kind: DocumentKind | None = None) -> CorpusLoad:
    """Documents and skipped parts of one file; ``CorpusFileError`` when the file itself is bad."""
    loader = LOADERS.get(path.suffix.lower())
    if loader is None:
        raise CorpusFileError(
            path,
            f"unsupported file type {path.suffix or '(none)'!r}; "
            f"use one of {', '.join(sorted(LOADERS))}",
        )
    try:
        return loader(path, app, kind=kind)
    except CorpusFileError:
        raise
    except UnicodeDecodeError as exc:
        raise CorpusFileError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise CorpusFileError(path, f"cannot read the file: {exc.strerror or exc}") from exc


def load_file(path: Path, app: str, *, kind: DocumentKind | None = None) -> list[Document]:
    """The documents of one file; skipped parts are logged as warnings."""
    loaded = read_file(path, app, kind=kind)
    _log_skipped(loaded.skipped)
    return loaded.documents


def expand_paths(paths: Iterable[Path]) -> list[Path]:
    """Files as given, directories replaced by their supported files (recursively, sorted)."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(
                sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in LOADERS)
            )
        else:
            files.append(path)
    return files


def load_paths(
    paths: Sequence[Path], app: str, *, kind: DocumentKind | None = None
) -> list[Document]:
    """Documents of every file, or ``CorpusLoadError`` listing every bad file."""
    return load_sources([(path, kind) for path in paths], app)


def load_sources(sources: Sequence[tuple[Path, DocumentKind | None]], app: str) -> list[Document]:
    """Like ``read_sources``, for callers that need the documents only; skips are logged."""
    loaded = read_sources(sources, app)
    _log_skipped(loaded.skipped)
    return loaded.documents


def read_sources(
    sources: Sequence[tuple[Path, DocumentKind | None]], app: str, *, strict: bool = False
) -> CorpusLoad:
    """Documents of every file with the parts skipped, a default kind per path.

    Raises ``CorpusLoadError`` (with every problem found, skipped parts too)
    when a file is bad, when nothing is left to ingest, or, with ``strict``,
    when any part was skipped. A file reached twice (listed and inside a
    listed folder) is read once; of two documents with one address, the first
    read is kept and the second skipped, naming the first's file.
    """
    errors: list[CorpusFileError] = []
    loaded = CorpusLoad()
    origin: dict[str, str] = {}
    files: dict[Path, tuple[Path, DocumentKind | None]] = {}
    for source, kind in sources:
        for path in expand_paths([source]):
            files.setdefault(path.resolve(), (path, kind))
    shown = ", ".join(str(s) for s, _ in sources) or "(no paths)"
    if not files:
        raise CorpusLoadError([CorpusFileError(shown, "no corpus files found")])
    for path, kind in files.values():
        if not path.exists():
            errors.append(CorpusFileError(path, "no such file"))
            continue
        try:
            one = read_file(path, app, kind=kind)
        except CorpusFileError as exc:
            errors.append(exc)
            continue
        loaded.skipped.extend(one.skipped)
        for document in one.documents:
            first = origin.get(document.address)
            if first is not None:
                loaded.skipped.append(
                    SkippedPart(
                        str(path),
                        f"duplicate address {document.address}: {first} defines it too",
                        _line_of(document),
                    )
                )
                continue
            origin[document.address] = str(path)
            loaded.documents.append(document)
    if strict:
        errors += [CorpusFileError(s.path, s.problem, line=s.line) for s in loaded.skipped]
    if errors:
        raise CorpusLoadError(errors, () if strict else loaded.skipped)
    if not loaded.documents:
        raise CorpusLoadError(
            [CorpusFileError(shown, "no document left to ingest: every part was skipped")],
            loaded.skipped,
        )
    return loaded


def _line_of(document: Document) -> int | None:
    """Where the document starts in its file, when its loader recorded it."""
    line = document.metadata.get("line")
    if isinstance(line, int):
        return line
    rows = document.metadata.get("rows")
    if isinstance(rows, list) and rows and isinstance(rows[0], int):
        return rows[0]
    return None


def _log_skipped(skipped: Iterable[SkippedPart]) -> None:
    for part in skipped:
        log.warning("skipped %s", part)
