"""The unit of an app's corpus: one typed, addressable software artefact.

REAG retrieves software context of different kinds (requirements R,
background knowledge K, personas p); the kind travels with every document so
the retriever and the oracle can tell a requirement from a persona.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from reag.corpus.errors import SkippedPart

DocumentKind = Literal[
    "requirement", "user_story", "persona", "domain_knowledge", "background", "nfr"
]
KINDS: tuple[DocumentKind, ...] = get_args(DocumentKind)


@dataclass(frozen=True, slots=True)
class Document:
    """``address`` (``<kind>/<local_id>``) is unique within an app; re-adding it replaces it."""

    app: str
    kind: DocumentKind
    local_id: str
    title: str
    content: str
    source: str
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def address(self) -> str:
        return f"{self.kind}/{self.local_id}"

    @property
    def text(self) -> str:
        """Title and body together: what the ranking kernels read."""
        if not self.title or self.content.startswith(self.title):
            return self.content
        return f"{self.title}\n{self.content}"

    @property
    def content_hash(self) -> str:
        payload = "\x1f".join((self.kind, self.local_id, self.title, self.content))
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def corpus_version(documents: Iterable[Document]) -> str:
    """A short hash of a set of documents, so caches can key on what they were built from."""
    digest = hashlib.sha256()
    for address, content_hash in sorted((d.address, d.content_hash) for d in documents):
        digest.update(f"{address}\x1f{content_hash}\x1e".encode())
    return digest.hexdigest()[:16]


@dataclass(slots=True)
class CorpusLoad:
    """What reading corpus files produced: the documents kept and the parts left out.

    Real SRS exports have empty sections and the odd malformed row; a load keeps
    the rest of the file and says what it skipped and why, so one bad row costs
    that row and the author still sees it.
    """

    documents: list[Document] = field(default_factory=list)
    skipped: list[SkippedPart] = field(default_factory=list)
