"""Markdown corpus files: one document per level-2 heading.

Front matter (a YAML block between ``---`` lines at the top) may declare the
``kind`` and any metadata every document of the file inherits. Text before
the first ``## `` heading is an introduction for human readers and is not
ingested, unless the file has no such heading: then the whole file is one
document named after the file.

A section that cannot become a document (no content, a heading without an id,
a second heading with the same id) is skipped and named by its line and
heading; the file's other sections are kept. Problems of the whole file (its
front matter, its kind, another app's file) refuse the file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from reag.corpus.errors import CorpusFileError, SkippedPart
from reag.corpus.kinds import kind_from_filename, parse_kind
from reag.corpus.model import CorpusLoad, Document, DocumentKind
from reag.corpus.naming import id_for_heading, slugify, split_heading

_H2 = re.compile(r"^##[ \t]+(?P<text>.+?)[ \t]*#*[ \t]*$")
_H1 = re.compile(r"^#[ \t]+(?P<text>.+?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^[ \t]*(```|~~~)")
_PLAIN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def _front_matter(path: Path, lines: list[str]) -> tuple[dict[str, Any], int]:
    """The parsed front matter and the index of the first body line."""
    if not lines or lines[0].strip() != "---":
        return {}, 0
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            break
    else:
        raise CorpusFileError(path, "front matter opened with '---' is never closed", line=1)
    try:
        data = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 1
        problem = getattr(exc, "problem", None) or str(exc)
        raise CorpusFileError(
            path, f"front matter is not valid YAML: {problem}", line=line
        ) from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise CorpusFileError(
            path, "front matter must be a YAML mapping such as 'kind: persona'", line=1
        )
    return data, end + 1


def _resolve_kind(path: Path, declared: Any, override: DocumentKind | None) -> DocumentKind:
    if declared is not None:
        kind = parse_kind(str(declared))
        if kind is None:
            raise CorpusFileError(
                path,
                f"front matter kind {declared!r} is not one of requirement, user_story, "
                "persona, domain_knowledge, background, nfr",
                line=1,
            )
        return kind
    if override is not None:
        return override
    inferred = kind_from_filename(path.stem)
    if inferred is None:
        raise CorpusFileError(
            path,
            "cannot tell the document kind from the file name; add front matter such as "
            "'---\\nkind: requirement\\n---' or pass --kind",
        )
    return inferred


def load_markdown(path: Path, app: str, *, kind: DocumentKind | None = None) -> CorpusLoad:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    meta, start = _front_matter(path, lines)
    doc_kind = _resolve_kind(path, meta.pop("kind", None), kind)
    declared_app = meta.pop("app", None)
    if declared_app is not None and str(declared_app) != app:
        raise CorpusFileError(
            path,
            f"front matter says app {declared_app!r} but the documents "
            f"are being added to app {app!r}",
            line=1,
        )

    sections, preamble = _split(lines, start)
    if not sections:
        whole = _whole_file(path, app, doc_kind, preamble, meta)
        if isinstance(whole, SkippedPart):
            return CorpusLoad([], [whole])
        return CorpusLoad([whole])

    loaded = CorpusLoad()
    seen: dict[str, int] = {}
    for number, heading, body in sections:
        local_id = id_for_heading(heading)
        content = "\n".join(body).strip()
        problem = None
        if not local_id:
            problem = f"heading {heading!r} has no letters or digits to make an id from"
        elif not content:
            problem = f"section {heading!r} has no content"
        elif local_id in seen:
            problem = (
                f"duplicate address {doc_kind}/{local_id}: the heading on line "
                f"{seen[local_id]} has the same id"
            )
        if problem is not None:
            loaded.skipped.append(SkippedPart(str(path), problem, number))
            continue
        seen[local_id] = number
        _, title = split_heading(heading)
        loaded.documents.append(
            Document(
                app=app,
                kind=doc_kind,
                local_id=local_id,
                title=title,
                content=content,
                source=str(path),
                metadata={**meta, "line": number},
            )
        )
    return loaded


def _split(lines: list[str], start: int) -> tuple[list[tuple[int, str, list[str]]], list[str]]:
    """``(1-based line, heading, body lines)`` per level-2 section, and the text before them."""
    sections: list[tuple[int, str, list[str]]] = []
    preamble: list[str] = []
    in_fence = False
    for number, line in enumerate(lines[start:], start=start + 1):
        if _FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else _H2.match(line)
        if match:
            sections.append((number, match.group("text"), []))
        elif sections:
            sections[-1][2].append(line)
        else:
            preamble.append(line)
    return sections, preamble


def _whole_file(
    path: Path, app: str, kind: DocumentKind, body: list[str], meta: dict[str, Any]
) -> Document | SkippedPart:
    """The file as one document; an empty file is skipped like an empty section."""
    content = "\n".join(body).strip()
    if not content:
        return SkippedPart(str(path), "the file has no content")
    title = path.stem.replace("_", " ")
    for line in body:
        h1 = _H1.match(line)
        if h1:
            title = h1.group("text")
            break
    local_id = path.stem if _PLAIN_ID.match(path.stem) else slugify(path.stem)
    if not local_id:
        raise CorpusFileError(path, "the file name has no letters or digits to make an id from")
    return Document(
        app=app,
        kind=kind,
        local_id=local_id,
        title=title,
        content=content,
        source=str(path),
        metadata=dict(meta),
    )
