"""The corpus in the SQL store: documents per app, replaced by address, added atomically.

A batch of documents is written in one transaction, so a failure part-way
leaves the corpus exactly as it was. Re-adding an address replaces the
document and bumps its ``version`` only when its content changed, which keeps
embedding caches (keyed on content) valid across re-ingestion.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Integer, String, Text, UniqueConstraint, select
from sqlalchemy.orm import Mapped, Session, mapped_column, sessionmaker

from reag.corpus.errors import DocumentNotFoundError, DuplicateAddressError
from reag.corpus.model import KINDS, Document, DocumentKind, corpus_version
from reag.storage import Base, open_store


class CorpusDocumentRow(Base):
    __tablename__ = "corpus_documents"
    __table_args__ = (UniqueConstraint("app", "address", name="uq_corpus_app_address"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    app: Mapped[str] = mapped_column(String(200), index=True)
    address: Mapped[str] = mapped_column(String(400))
    kind: Mapped[str] = mapped_column(String(32), index=True)
    local_id: Mapped[str] = mapped_column(String(300))
    title: Mapped[str] = mapped_column(Text)
    content: Mapped[str] = mapped_column(Text)
    source: Mapped[str] = mapped_column(Text)
    metadata_json: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    content_sha256: Mapped[str] = mapped_column(String(64))
    version: Mapped[int] = mapped_column(Integer, default=1)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


@dataclass(frozen=True, slots=True)
class AddReport:
    """What one ``CorpusStore.add`` did, by address."""

    added: list[str]
    replaced: list[str]
    unchanged: list[str]

    @property
    def total(self) -> int:
        return len(self.added) + len(self.replaced) + len(self.unchanged)


def _kind_of(row: CorpusDocumentRow) -> DocumentKind:
    for kind in KINDS:
        if kind == row.kind:
            return kind
    raise ValueError(f"stored document {row.app}/{row.address} has unknown kind {row.kind!r}")


def _to_document(row: CorpusDocumentRow) -> Document:
    kind = _kind_of(row)
    return Document(
        app=row.app,
        kind=kind,
        local_id=row.local_id,
        title=row.title,
        content=row.content,
        source=row.source,
        metadata={**(row.metadata_json or {}), "version": row.version},
    )


class CorpusStore:
    """Documents of every app; one instance per process is enough (sessions are short)."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    @classmethod
    def open(cls, dsn: str) -> CorpusStore:
        """Creates the tables if missing."""
        return cls(open_store(dsn))

    def add(self, app: str, documents: Sequence[Document]) -> AddReport:
        """All documents or none: one transaction."""
        seen: set[str] = set()
        for document in documents:
            if document.app != app:
                raise ValueError(
                    f"document {document.address} belongs to app {document.app!r}, not {app!r}"
                )
            if document.address in seen:
                raise DuplicateAddressError(
                    f"{document.address} appears twice in one batch for app {app!r}"
                )
            seen.add(document.address)

        added: list[str] = []
        replaced: list[str] = []
        unchanged: list[str] = []
        now = datetime.now(UTC)
        with self._sessions.begin() as session:
            existing = {
                row.address: row
                for row in session.scalars(
                    select(CorpusDocumentRow).where(CorpusDocumentRow.app == app)
                )
            }
            for document in documents:
                digest = document.content_hash
                row = existing.get(document.address)
                if row is None:
                    session.add(
                        CorpusDocumentRow(
                            app=app,
                            address=document.address,
                            kind=document.kind,
                            local_id=document.local_id,
                            title=document.title,
                            content=document.content,
                            source=document.source,
                            metadata_json=dict(document.metadata),
                            content_sha256=digest,
                            version=1,
                            updated_at=now,
                        )
                    )
                    added.append(document.address)
                    continue
                changed = row.content_sha256 != digest
                row.title = document.title
                row.content = document.content
                row.source = document.source
                row.metadata_json = dict(document.metadata)
                if changed:
                    row.content_sha256 = digest
                    row.version += 1
                    row.updated_at = now
                    replaced.append(document.address)
                else:
                    unchanged.append(document.address)
            session.flush()
        return AddReport(added, replaced, unchanged)

    def list(self, app: str, kind: DocumentKind | None = None) -> list[Document]:
        """In address order, so rankings and caches see a stable order."""
        query = select(CorpusDocumentRow).where(CorpusDocumentRow.app == app)
        if kind is not None:
            query = query.where(CorpusDocumentRow.kind == kind)
        with self._sessions() as session:
            rows = session.scalars(query.order_by(CorpusDocumentRow.address)).all()
            return [_to_document(row) for row in rows]

    def get(self, app: str, address: str) -> Document:
        with self._sessions() as session:
            row = session.scalars(
                select(CorpusDocumentRow).where(
                    CorpusDocumentRow.app == app, CorpusDocumentRow.address == address
                )
            ).first()
            if row is None:
                raise DocumentNotFoundError(
                    f"app {app!r} has no document {address!r}; `reag corpus list --app {app}` "
                    "shows what it has"
                )
            return _to_document(row)

    def apps(self) -> builtins.list[str]:
        with self._sessions() as session:
            return list(
                session.scalars(
                    select(CorpusDocumentRow.app).distinct().order_by(CorpusDocumentRow.app)
                )
            )

    def has_app(self, app: str) -> bool:
        with self._sessions() as session:
            return (
                session.scalars(
                    select(CorpusDocumentRow.id).where(CorpusDocumentRow.app == app).limit(1)
                ).first()
                is not None
            )

    def version(self, app: str) -> str:
        """Changes whenever any document of the app is added or changes content."""
        return corpus_version(self.list(app))
