"""Audits as labelled, with every tier's score, in the same SQL store as calibration.

The calibration store keeps an audit as a calibration item (without the
tiers' opinions, which are not part of an item); the trust monitor needs
those opinions, in the order the labels came, so they are kept here too.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Integer, String, UniqueConstraint, select
from sqlalchemy.orm import Mapped, Session, mapped_column, sessionmaker

from reag.storage import Base
from reag.trust.drift import criterion_type
from reag.trust.monitor import LabelledScores, TierScore
from reag.v1 import events_pb2 as pb

_LABELS = {pb.LABEL_YES: "YES", pb.LABEL_NO: "NO"}


class TrustAuditRow(Base):
    __tablename__ = "trust_audits"
    __table_args__ = (UniqueConstraint("app", "criterion_id", name="uq_trust_audit"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    app: Mapped[str] = mapped_column(String(200), index=True)
    criterion_id: Mapped[str] = mapped_column(String(400))
    label: Mapped[str] = mapped_column(String(3))
    persona_category: Mapped[str] = mapped_column(String(200))
    criterion_type: Mapped[str] = mapped_column(String(8))
    scores: Mapped[list[Any]] = mapped_column(JSON)  # [[tier, verdict, confidence], ...]
    labelled_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def audit_from_review(review: pb.Review) -> LabelledScores | None:
    """The audit a review labels, with every tier's score; None if it is not an audit."""
    item = review.item
    if not item.audit or review.label not in _LABELS:
        return None
    scores = tuple(
        TierScore(a.tier, _LABELS.get(a.verdict, "?"), a.confidence) for a in item.history
    )
    return LabelledScores(
        review.criterion_id,
        _LABELS[review.label],
        item.persona.category_id,
        criterion_type(item.criterion.text),
        scores,
    )


class AuditStore:
    """Labelled audits per app, oldest label first; one row per criterion (relabels update)."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    def add(self, app: str, audit: LabelledScores) -> bool:
        """Store a labelled audit; True if it is new (a relabel keeps its place in time)."""
        scores = [[s.tier, s.verdict, s.confidence] for s in audit.scores]
        with self._sessions.begin() as session:
            row = session.scalars(
                select(TrustAuditRow).where(
                    TrustAuditRow.app == app, TrustAuditRow.criterion_id == audit.item_id
                )
            ).one_or_none()
            if row is not None:
                row.label = audit.label
                return False
            session.add(
                TrustAuditRow(
                    app=app,
                    criterion_id=audit.item_id,
                    label=audit.label,
                    persona_category=audit.persona_category,
                    criterion_type=audit.criterion_type,
                    scores=scores,
                    labelled_at=datetime.now(UTC),
                )
            )
            return True

    def audits(self, app: str, *, after: datetime | None = None) -> list[LabelledScores]:
        with self._sessions() as session:
            query = select(TrustAuditRow).where(TrustAuditRow.app == app)
            if after is not None:
                query = query.where(TrustAuditRow.labelled_at > after)
            rows = session.scalars(query.order_by(TrustAuditRow.id)).all()
        return [
            LabelledScores(
                r.criterion_id,
                r.label,
                r.persona_category,
                r.criterion_type,
                tuple(TierScore(int(t), str(v), float(c)) for t, v, c in r.scores),
            )
            for r in rows
            if after is None or _utc(r.labelled_at) > after
        ]

    def count(self, app: str) -> int:
        return len(self.audits(app))

    def apps(self) -> list[str]:
        with self._sessions() as session:
            return sorted(session.scalars(select(TrustAuditRow.app).distinct()).all())
