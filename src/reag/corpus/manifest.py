"""The app manifest (``app.yaml``): which corpus files make up an app, and what else it has.

Only ``name``, ``corpus`` and ``always`` matter to ingestion; the other sections
(seed queries, calibration, the sample app) belong to other stages and are
kept as parsed YAML for them. Corpus paths are relative to the manifest.

``always`` lists documents (``<kind>/<id>``) that every request's oracle must see,
whatever the ranking says, such as the scope, safety and security sections: a
request that should be declined or escalated rarely shares words with them. Their
documents carry ``metadata["always"] = True`` and the retriever keeps them
(``RetrieverConfig.pin_always``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from reag.corpus.errors import ManifestError
from reag.corpus.kinds import parse_kind
from reag.corpus.loader import load_sources
from reag.corpus.model import Document, DocumentKind


class CorpusEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str
    kind: DocumentKind | None = None

    @field_validator("kind", mode="before")
    @classmethod
    def _parse_kind(cls, value: Any) -> DocumentKind | None:
        if value is None:
            return None
        kind = parse_kind(str(value))
        if kind is None:
            raise ValueError(f"unknown kind {value!r}")
        return kind


class AppManifest(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1, description="The app's name; corpus and results key on it.")
    corpus: list[CorpusEntry] = Field(default_factory=list)
    seed_queries: Any = None
    calibration: Any = None
    sample_app: Any = None
    always: list[str] = Field(
        default_factory=list,
        description="Addresses of documents every request's oracle sees (scope, safety).",
    )
    base_dir: Path = Field(
        default=Path("."),
        exclude=True,
        description="The manifest's folder; relative paths start here.",
    )

    @field_validator("corpus", mode="before")
    @classmethod
    def _entries(cls, value: Any) -> Any:
        if isinstance(value, (str, dict)):
            value = [value]
        if isinstance(value, list):
            return [{"path": v} if isinstance(v, str) else v for v in value]
        return value

    def corpus_paths(self) -> list[tuple[Path, DocumentKind | None]]:
        return [(self.base_dir / entry.path, entry.kind) for entry in self.corpus]

    def load_documents(self) -> list[Document]:
        """The corpus files' documents, those listed in ``always`` marked so.

        Raises ``ManifestError`` for an ``always`` address no corpus file defines: a
        typo there would silently drop a safety section from every request.
        """
        documents = load_sources(self.corpus_paths(), self.name)
        unknown = set(self.always) - {d.address for d in documents}
        if unknown:
            raise ManifestError(
                f"{self.name}: 'always' lists documents no corpus file defines: "
                f"{', '.join(sorted(unknown))}"
            )
        wanted = set(self.always)
        return [
            dataclasses.replace(d, metadata={**d.metadata, "always": True})
            if d.address in wanted
            else d
            for d in documents
        ]

    def resolve(self, relative: str) -> Path:
        """A path written in the manifest, as seen from the current directory."""
        return self.base_dir / relative


def load_manifest(path: Path) -> AppManifest:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read the manifest: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ManifestError(
            f"{where}: malformed YAML: {getattr(exc, 'problem', None) or exc}"
        ) from exc
    if not isinstance(data, dict):
        raise ManifestError(
            f"{path}: a manifest is a YAML mapping with at least 'name' and 'corpus'"
        )
    try:
        manifest = AppManifest.model_validate({**data, "base_dir": path.parent})
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise ManifestError(f"{path}: field {field!r}: {first['msg']}") from exc
    if not manifest.corpus:
        raise ManifestError(f"{path}: 'corpus' lists no files")
    return manifest
