"""JSON and YAML corpus files: a list of documents, with an optional file-level kind.

Accepted shapes::

    {kind: persona, documents: [{id, title, content, kind?, metadata?}, ...]}
    [{id, kind, title, content, metadata?}, ...]

Each document is checked on its own: one without content, kind or a valid
field is skipped and named by its position and id, and the file's other
documents are kept. Problems of the whole file (unparseable, not a list of
documents, another app's file) refuse the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from reag.corpus.errors import CorpusFileError, SkippedPart
from reag.corpus.kinds import kind_from_filename, parse_kind
from reag.corpus.model import CorpusLoad, Document, DocumentKind


def _kind(value: Any) -> DocumentKind | None:
    if value is None:
        return None
    kind = parse_kind(str(value))
    if kind is None:
        raise ValueError(
            f"unknown kind {value!r}; use requirement, user_story, persona, "
            "domain_knowledge, background or nfr"
        )
    return kind


class DocumentEntry(BaseModel):
    """One document as written in a JSON/YAML corpus file."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, description="Local id, unique per kind within the app.")
    kind: DocumentKind | None = None
    title: str = ""
    # Empty or absent content is checked after validation, so its message can say
    # "has no content" (as Markdown and CSV do) rather than quote a pydantic rule.
    content: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id", mode="before")
    @classmethod
    def _id_text(cls, value: Any) -> Any:
        return str(value).strip() if isinstance(value, (int, str)) else value

    @field_validator("kind", mode="before")
    @classmethod
    def _parse_kind(cls, value: Any) -> DocumentKind | None:
        return _kind(value)


class CorpusFile(BaseModel):
    """Keys besides ``kind``, ``app`` and ``documents`` become metadata of every document."""

    model_config = ConfigDict(extra="allow")

    kind: DocumentKind | None = None
    app: str | None = None
    # Validated one by one (``DocumentEntry``), so one bad document costs only itself.
    documents: list[Any]

    @field_validator("kind", mode="before")
    @classmethod
    def _parse_kind(cls, value: Any) -> DocumentKind | None:
        return _kind(value)


def _parse(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise CorpusFileError(path, f"malformed JSON: {exc.msg}", line=exc.lineno) from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        line = mark.line + 1 if mark is not None else None
        raise CorpusFileError(path, f"malformed YAML: {problem}", line=line) from exc


def _where(loc: tuple[int | str, ...]) -> str:
    parts = [str(p) for p in loc]
    return f"field {'.'.join(parts)!r}" if parts else "the file"


def _name(index: int, raw: Any) -> str:
    """``document #3`` or ``document #3 ('P1')``: the position, and the id when it has one."""
    ident = raw.get("id") if isinstance(raw, dict) else None
    shown = f" ({str(ident).strip()!r})" if isinstance(ident, (int, str)) and ident != "" else ""
    return f"document #{index}{shown}"


def load_structured(path: Path, app: str, *, kind: DocumentKind | None = None) -> CorpusLoad:
    data = _parse(path)
    if isinstance(data, list):
        data = {"documents": data}
    if not isinstance(data, dict):
        raise CorpusFileError(
            path, "expected a mapping with a 'documents' list, or a list of documents"
        )
    try:
        parsed = CorpusFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise CorpusFileError(path, f"{_where(first['loc'])}: {first['msg']}") from exc
    if parsed.app is not None and parsed.app != app:
        raise CorpusFileError(
            path,
            f"the file says app {parsed.app!r} but the documents are being added to app {app!r}",
        )
    loaded = CorpusLoad()
    if not parsed.documents:
        loaded.skipped.append(SkippedPart(str(path), "the file lists no documents"))
        return loaded
    shared = dict(parsed.model_extra or {})

    seen: dict[str, int] = {}
    fallback = parsed.kind or kind or kind_from_filename(path.stem)
    for index, raw in enumerate(parsed.documents, start=1):
        name = _name(index, raw)
        try:
            entry = DocumentEntry.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = f" {_where(first['loc'])}" if first["loc"] else ""
            # pydantic's ``msg`` names the rule, not the value, so no content is echoed.
            loaded.skipped.append(SkippedPart(str(path), f"{name}{where}: {first['msg']}"))
            continue
        doc_kind = entry.kind or fallback
        content = entry.content.strip()
        if not content:
            loaded.skipped.append(SkippedPart(str(path), f"{name} has no content"))
            continue
        if doc_kind is None:
            loaded.skipped.append(
                SkippedPart(
                    str(path),
                    f"{name} has no kind: give it 'kind:', set 'kind:' at the top of the "
                    "file, or pass --kind",
                )
            )
            continue
        document = Document(
            app=app,
            kind=doc_kind,
            local_id=entry.id,
            title=entry.title or entry.id,
            content=content,
            source=str(path),
            metadata={**shared, **entry.metadata},
        )
        if document.address in seen:
            loaded.skipped.append(
                SkippedPart(
                    str(path),
                    f"duplicate address {document.address}: documents "
                    f"#{seen[document.address]} and #{index}",
                )
            )
            continue
        seen[document.address] = index
        loaded.documents.append(document)
    return loaded
