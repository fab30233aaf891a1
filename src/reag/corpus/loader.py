"""Reading corpus files of every supported format, all or nothing.

Every file is parsed before anything is stored, and every problem of every
file is collected, so one ``reag corpus add`` either ingests all it was given
or reports all that is wrong and ingests nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from reag.corpus.errors import CorpusFileError, CorpusLoadError
from reag.corpus.markdown import load_markdown
from reag.corpus.model import Document, DocumentKind
from reag.corpus.pdf import load_pdf
from reag.corpus.structured import load_structured
from reag.corpus.tabular import load_csv

FileLoader = Callable[..., list[Document]]

LOADERS: dict[str, FileLoader] = {
    ".md": load_markdown,
    ".markdown": load_markdown,
    ".csv": load_csv,
    ".json": load_structured,
    ".yaml": load_structured,
    ".yml": load_structured,
    ".pdf": load_pdf,
}


def load_file(path: Path, app: str, *, kind: DocumentKind | None = None) -> list[Document]:
    """Documents of one file; ``CorpusFileError`` names the file and the problem."""
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
    """Like ``load_paths``, with a default kind per path (a manifest entry may name one).

    A file reached twice (listed and inside a listed folder) is read once.
    """
    errors: list[CorpusFileError] = []
    documents: list[Document] = []
    origin: dict[str, str] = {}
    files: dict[Path, tuple[Path, DocumentKind | None]] = {}
    for source, kind in sources:
        for path in expand_paths([source]):
            files.setdefault(path.resolve(), (path, kind))
    if not files:
        shown = ", ".join(str(s) for s, _ in sources) or "(no paths)"
        raise CorpusLoadError([CorpusFileError(shown, "no corpus files found")])
    for path, kind in files.values():
        if not path.exists():
            errors.append(CorpusFileError(path, "no such file"))
            continue
        try:
            loaded = load_file(path, app, kind=kind)
        except CorpusFileError as exc:
            errors.append(exc)
            continue
        for document in loaded:
            first = origin.get(document.address)
            if first is not None:
                errors.append(
                    CorpusFileError(
                        path, f"duplicate address {document.address}: {first} defines it too"
                    )
                )
                continue
            origin[document.address] = str(path)
            documents.append(document)
    if errors:
        raise CorpusLoadError(errors)
    return documents
