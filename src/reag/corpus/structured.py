"""JSON and YAML corpus files: a list of documents, with an optional file-level kind.

Accepted shapes::

    {kind: persona, documents: [{id, title, content, kind?, metadata?}, ...]}
    [{id, kind, title, content, metadata?}, ...]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from reag.corpus.errors import CorpusFileError
from reag.corpus.kinds import kind_from_filename, parse_kind
from reag.corpus.model import Document, DocumentKind


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
    content: str = Field(min_length=1)
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
    documents: list[DocumentEntry]

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
    if len(parts) >= 2 and parts[0] == "documents":
        rest = ".".join(parts[2:])
        return f"document #{int(parts[1]) + 1}" + (f" field {rest!r}" if rest else "")
    return f"field {'.'.join(parts)!r}" if parts else "the file"


def load_structured(path: Path, app: str, *, kind: DocumentKind | None = None) -> list[Document]:
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
    if not parsed.documents:
        raise CorpusFileError(path, "the file lists no documents")
    if parsed.app is not None and parsed.app != app:
        raise CorpusFileError(
            path,
            f"the file says app {parsed.app!r} but the documents are being added to app {app!r}",
        )
    shared = dict(parsed.model_extra or {})

    documents: list[Document] = []
    seen: dict[str, int] = {}
    fallback = parsed.kind or kind or kind_from_filename(path.stem)
    for index, entry in enumerate(parsed.documents, start=1):
        doc_kind = entry.kind or fallback
        if doc_kind is None:
            raise CorpusFileError(
                path,
                f"document #{index} ({entry.id!r}) has no kind: give it 'kind:', set "
                "'kind:' at the top of the file, or pass --kind",
            )
        document = Document(
            app=app,
            kind=doc_kind,
            local_id=entry.id,
            title=entry.title or entry.id,
            content=entry.content.strip(),
            source=str(path),
            metadata={**shared, **entry.metadata},
        )
        if document.address in seen:
            raise CorpusFileError(
                path,
                f"duplicate address {document.address}: documents "
                f"#{seen[document.address]} and #{index}",
            )
        seen[document.address] = index
        documents.append(document)
    return documents
