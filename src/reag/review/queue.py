"""The review queue in the SQL store: one queue per app, shared by every review front end.

``reag review`` in a terminal and ``reag review --web`` both take items from
here, so an item one of them holds is not offered by the other: taking an
item writes a lease (``lease_by``, ``lease_until``) with a compare-and-set
UPDATE, which is atomic on SQLite and PostgreSQL alike; a lease that runs out
(a closed browser tab) puts the item back. Labels are rows of their own, one
per reviewer and item, so double review, the reviewers' agreement and the
export all read the same table. The rules (who decides, in what order) are in
``reag.review.policy``; publishing is the caller's: ``record`` returns the
``Review`` to send when an item resolves, and ``mark_published`` records that
it went, so a crash between the two re-sends it (``unpublished``) rather than
losing it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import (
    Boolean,
    DateTime,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    and_,
    case,
    exists,
    or_,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, Session, mapped_column, sessionmaker

from reag.review.policy import (
    DECISIVE,
    VOTES,
    Vote,
    as_label,
    closed_unresolved,
    reason_kind,
    resolve,
)
from reag.review.session import build_review
from reag.storage import Base
from reag.v1 import events_pb2 as pb

DEFAULT_LEASE = timedelta(minutes=15)
OPEN, RESOLVED, CLOSED = "open", "resolved", "closed"


class ReviewItemRow(Base):
    __tablename__ = "review_queue"
    __table_args__ = (UniqueConstraint("app", "criterion_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    app: Mapped[str] = mapped_column(String(200), index=True)
    criterion_id: Mapped[str] = mapped_column(String(200))
    case_id: Mapped[str] = mapped_column(String(200))
    persona_category: Mapped[str] = mapped_column(String(200), default="")
    reason_kind: Mapped[str] = mapped_column(String(64))
    audit: Mapped[bool] = mapped_column(Boolean)
    abstain_pb: Mapped[bytes] = mapped_column(LargeBinary)
    enqueued_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    status: Mapped[str] = mapped_column(String(16), default=OPEN, index=True)
    lease_by: Mapped[str | None] = mapped_column(String(200), nullable=True)
    lease_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    resolved_label: Mapped[str | None] = mapped_column(String(8), nullable=True)
    published_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class ReviewLabelRow(Base):
    __tablename__ = "review_labels"
    __table_args__ = (UniqueConstraint("item_id", "reviewer"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("review_queue.id"), index=True)
    reviewer: Mapped[str] = mapped_column(String(200))
    vote: Mapped[str] = mapped_column(String(16))
    note: Mapped[str] = mapped_column(Text, default="")
    labelled_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


@dataclass(frozen=True, slots=True)
class Filters:
    """What a reviewer asked to see; empty fields match everything."""

    app: str = ""
    persona_category: str = ""
    reason: str = ""


@dataclass(frozen=True, slots=True)
class QueueItem:
    key: int
    app: str
    criterion_id: str
    persona_category: str
    reason_kind: str
    audit: bool
    abstain: pb.Abstain


@dataclass(frozen=True, slots=True)
class LabelRecord:
    """One reviewer's label, as exported and as the agreement statistics read it."""

    key: int
    app: str
    criterion_id: str
    case_id: str
    persona_category: str
    reason_kind: str
    audit: bool
    reviewer: str
    vote: Vote
    note: str
    labelled_at: datetime
    resolved_label: str | None
    history: tuple[tuple[int, str], ...]  # (tier, verdict YES/NO) of every tier that ran


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a label did: the item's state after it, and the Review to publish if it resolved."""

    status: str
    resolved_label: str | None
    review: pb.Review | None


class AlreadyLabelledError(ValueError):
    """This reviewer has already labelled (or skipped) this item."""


class NotHeldError(ValueError):
    """The item is not leased to this reviewer (taken elsewhere, lease run out, or closed)."""


def _aware(value: datetime | None) -> datetime | None:
    # SQLite hands back naive datetimes for timezone-aware columns.
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


def _item(row: ReviewItemRow) -> QueueItem:
    return QueueItem(
        key=row.id,
        app=row.app,
        criterion_id=row.criterion_id,
        persona_category=row.persona_category,
        reason_kind=row.reason_kind,
        audit=row.audit,
        abstain=pb.Abstain.FromString(row.abstain_pb),
    )


class ReviewQueue:
    """The shared queue; cheap to build, one session per call.

    ``has_threshold(app)`` says whether the app has a threshold of its own (the
    calibration store's), for the audit-first order of ``reag.review.policy``.
    """

    def __init__(
        self,
        sessions: sessionmaker[Session],
        *,
        per_item: int = 1,
        lease: timedelta = DEFAULT_LEASE,
        has_threshold: Callable[[str], bool] = lambda app: True,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        if per_item not in (1, 2):
            raise ValueError(f"reviewers per item must be 1 or 2, got {per_item}")
        self._sessions = sessions
        self.per_item = per_item
        self._lease = lease
        self._has_threshold = has_threshold
        self._now = clock

    def has_threshold(self, app: str) -> bool:
        """Whether ``app`` has a threshold of its own (else its audits come first)."""
        return self._has_threshold(app)

    # --- in -------------------------------------------------------------------------
    def add(self, abstain: pb.Abstain) -> bool:
        """Queue an abstained or audited criterion; False if it is already queued."""
        row = ReviewItemRow(
            app=abstain.meta.app or abstain.request.meta.app,
            criterion_id=abstain.request.criterion.criterion_id,
            case_id=abstain.meta.case_id,
            persona_category=abstain.request.persona.category_id,
            reason_kind=reason_kind(abstain),
            audit=abstain.audit,
            abstain_pb=abstain.SerializeToString(deterministic=True),
            enqueued_at=self._now(),
            status=OPEN,
        )
        try:
            with self._sessions.begin() as session:
                session.add(row)
        except IntegrityError:
            return False
        return True

    # --- taking an item ---------------------------------------------------------------
    def _candidates(
        self, session: Session, reviewer: str, filters: Filters, exclude: Collection[int] = ()
    ) -> list[int]:
        now = self._now()
        apps = session.scalars(
            select(ReviewItemRow.app).where(ReviewItemRow.status == OPEN).distinct()
        ).all()
        first = [app for app in apps if not self._has_threshold(app)]
        rank = case(
            (and_(ReviewItemRow.audit, ReviewItemRow.app.in_(first)), 0),
            (ReviewItemRow.audit, 1),
            else_=2,
        )
        mine = exists().where(
            ReviewLabelRow.item_id == ReviewItemRow.id, ReviewLabelRow.reviewer == reviewer
        )
        query = select(ReviewItemRow.id).where(
            ReviewItemRow.status == OPEN,
            ~mine,
            or_(
                ReviewItemRow.lease_by.is_(None),
                ReviewItemRow.lease_by == reviewer,
                ReviewItemRow.lease_until < now,
            ),
        )
        if filters.app:
            query = query.where(ReviewItemRow.app == filters.app)
        if filters.persona_category:
            query = query.where(ReviewItemRow.persona_category == filters.persona_category)
        if filters.reason:
            query = query.where(ReviewItemRow.reason_kind == filters.reason)
        if exclude:
            query = query.where(ReviewItemRow.id.not_in(list(exclude)))
        # An item this reviewer already holds comes back first (a reload keeps the page).
        held = case((ReviewItemRow.lease_by == reviewer, 0), else_=1)
        return list(session.scalars(query.order_by(held, rank, ReviewItemRow.id).limit(20)).all())

    def take(
        self, reviewer: str, filters: Filters = Filters(), *, exclude: Collection[int] = ()
    ) -> QueueItem | None:
        """Lease the next item for ``reviewer`` under ``filters`` (not one of ``exclude``, the
        items this reviewer skipped), or None if none is left."""
        with self._sessions.begin() as session:
            for key in self._candidates(session, reviewer, filters, exclude):
                now = self._now()
                claimed = session.execute(
                    update(ReviewItemRow)
                    .where(
                        ReviewItemRow.id == key,
                        ReviewItemRow.status == OPEN,
                        or_(
                            ReviewItemRow.lease_by.is_(None),
                            ReviewItemRow.lease_by == reviewer,
                            ReviewItemRow.lease_until < now,
                        ),
                    )
                    .values(lease_by=reviewer, lease_until=now + self._lease)
                )
                if claimed.rowcount == 1:  # type: ignore[attr-defined]
                    return _item(session.get_one(ReviewItemRow, key))
        return None

    def held(self, key: int, reviewer: str) -> QueueItem | None:
        """The item if ``reviewer`` holds its lease now, else None."""
        with self._sessions() as session:
            row = session.get(ReviewItemRow, key)
            if row is None or row.status != OPEN or row.lease_by != reviewer:
                return None
            until = _aware(row.lease_until)
            if until is None or until < self._now():
                return None
            return _item(row)

    def release(self, key: int, reviewer: str) -> None:
        """Give the lease back (the reviewer moved on without a label)."""
        with self._sessions.begin() as session:
            session.execute(
                update(ReviewItemRow)
                .where(ReviewItemRow.id == key, ReviewItemRow.lease_by == reviewer)
                .values(lease_by=None, lease_until=None)
            )

    # --- labels -------------------------------------------------------------------------
    def record(self, key: int, reviewer: str, vote: Vote, note: str = "") -> Outcome:
        """Store ``reviewer``'s YES, NO or CANNOT_TELL on a held item; resolve the item when
        the votes settle it. Raises ``NotHeldError`` unless ``reviewer`` holds the item's lease."""
        if vote not in VOTES or vote == "SKIP":
            raise ValueError(f"not a label: {vote!r} (a skip is a release)")
        now = self._now()
        with self._sessions.begin() as session:
            row = session.get(ReviewItemRow, key, with_for_update=True)
            until = _aware(row.lease_until) if row is not None else None
            if (
                row is None
                or row.status != OPEN
                or row.lease_by != reviewer
                or until is None
                or until < now
            ):
                raise NotHeldError(f"item {key} is not held by {reviewer}")
            if session.scalars(
                select(ReviewLabelRow.id).where(
                    ReviewLabelRow.item_id == key, ReviewLabelRow.reviewer == reviewer
                )
            ).first():
                raise AlreadyLabelledError(f"{reviewer} already labelled item {key}")
            session.add(
                ReviewLabelRow(
                    item_id=key, reviewer=reviewer, vote=vote, note=note, labelled_at=now
                )
            )
            row.lease_by, row.lease_until = None, None
            labels = session.scalars(
                select(ReviewLabelRow)
                .where(ReviewLabelRow.item_id == key)
                .order_by(ReviewLabelRow.id)
            ).all()
            votes: list[Vote] = [label.vote for label in labels]  # type: ignore[misc]
            resolved = resolve(votes, self.per_item)
            review: pb.Review | None = None
            if resolved is not None:
                row.status, row.resolved_label = RESOLVED, resolved
                winners = [label for label in labels if label.vote == resolved]
                review = build_review(
                    pb.Abstain.FromString(row.abstain_pb),
                    as_label(resolved),
                    reviewer="+".join(label.reviewer for label in winners),
                    comment="\n".join(label.note for label in winners if label.note),
                    now=now,
                )
            elif closed_unresolved(votes):
                row.status = CLOSED
            return Outcome(row.status, row.resolved_label, review)

    def labelled_by(self, key: int, reviewer: str) -> Vote | None:
        """``reviewer``'s vote on the item, None if none (the blind rule's test)."""
        with self._sessions() as session:
            return session.scalars(  # type: ignore[return-value]
                select(ReviewLabelRow.vote).where(
                    ReviewLabelRow.item_id == key, ReviewLabelRow.reviewer == reviewer
                )
            ).first()

    def item(self, key: int) -> QueueItem | None:
        with self._sessions() as session:
            row = session.get(ReviewItemRow, key)
            return None if row is None else _item(row)

    def resolved_label(self, key: int) -> str | None:
        with self._sessions() as session:
            row = session.get(ReviewItemRow, key)
            return None if row is None else row.resolved_label

    def mark_published(self, key: int) -> None:
        with self._sessions.begin() as session:
            session.execute(
                update(ReviewItemRow)
                .where(ReviewItemRow.id == key)
                .values(published_at=self._now())
            )

    def unpublished(self) -> list[tuple[int, pb.Review]]:
        """Resolved items whose Review has not been acknowledged yet, oldest first."""
        with self._sessions() as session:
            rows = session.scalars(
                select(ReviewItemRow)
                .where(ReviewItemRow.status == RESOLVED, ReviewItemRow.published_at.is_(None))
                .order_by(ReviewItemRow.id)
            ).all()
            keys = [(row.id, row.abstain_pb, row.resolved_label) for row in rows]
            out: list[tuple[int, pb.Review]] = []
            for key, blob, resolved in keys:
                labels = session.scalars(
                    select(ReviewLabelRow)
                    .where(ReviewLabelRow.item_id == key, ReviewLabelRow.vote == resolved)
                    .order_by(ReviewLabelRow.id)
                ).all()
                review = build_review(
                    pb.Abstain.FromString(blob),
                    as_label(resolved),  # type: ignore[arg-type]
                    reviewer="+".join(label.reviewer for label in labels),
                    comment="\n".join(label.note for label in labels if label.note),
                    now=_aware(labels[-1].labelled_at) if labels else None,
                )
                out.append((key, review))
        return out

    # --- what the pages list --------------------------------------------------------------
    def counts(self) -> list[tuple[str, int, int, int]]:
        """Per app: open audits, open abstentions, resolved items."""
        with self._sessions() as session:
            rows = session.execute(
                select(ReviewItemRow.app, ReviewItemRow.status, ReviewItemRow.audit)
            ).all()
        table: dict[str, list[int]] = {}
        for app, status, audit in rows:
            cell = table.setdefault(app, [0, 0, 0])
            if status == OPEN:
                cell[0 if audit else 1] += 1
            elif status == RESOLVED:
                cell[2] += 1
        return [(app, *table[app]) for app in sorted(table)]  # type: ignore[misc]

    def facets(self) -> dict[str, list[str]]:
        """The values the filters can take: apps, persona categories, reason kinds."""
        with self._sessions() as session:
            rows = session.execute(
                select(
                    ReviewItemRow.app, ReviewItemRow.persona_category, ReviewItemRow.reason_kind
                ).where(ReviewItemRow.status == OPEN)
            ).all()
        return {
            "app": sorted({r[0] for r in rows}),
            "persona_category": sorted({r[1] for r in rows if r[1]}),
            "reason": sorted({r[2] for r in rows}),
        }

    def waiting(
        self, reviewer: str, filters: Filters = Filters(), limit: int = 50
    ) -> list[QueueItem]:
        """The items ``reviewer`` would be offered, in order, without taking any."""
        with self._sessions() as session:
            keys = self._candidates(session, reviewer, filters)[:limit]
            return [_item(session.get_one(ReviewItemRow, key)) for key in keys]

    def labels(self, app: str | None = None) -> list[LabelRecord]:
        """Every vote (skips excluded), oldest first, with its item's resolved label."""
        with self._sessions() as session:
            query = (
                select(ReviewLabelRow, ReviewItemRow)
                .join(ReviewItemRow, ReviewItemRow.id == ReviewLabelRow.item_id)
                .where(ReviewLabelRow.vote != "SKIP")
                .order_by(ReviewLabelRow.id)
            )
            if app is not None:
                query = query.where(ReviewItemRow.app == app)
            out = []
            for label, item in session.execute(query).all():
                abstain = pb.Abstain.FromString(item.abstain_pb)
                history = tuple(
                    (attempt.tier, "YES" if attempt.verdict == pb.LABEL_YES else "NO")
                    for attempt in abstain.request.history
                    if attempt.verdict in (pb.LABEL_YES, pb.LABEL_NO)
                )
                out.append(
                    LabelRecord(
                        key=item.id,
                        app=item.app,
                        criterion_id=item.criterion_id,
                        case_id=item.case_id,
                        persona_category=item.persona_category,
                        reason_kind=item.reason_kind,
                        audit=item.audit,
                        reviewer=label.reviewer,
                        vote=label.vote,  # type: ignore[arg-type]
                        note=label.note,
                        labelled_at=_aware(label.labelled_at) or label.labelled_at,
                        resolved_label=item.resolved_label,
                        history=history,
                    )
                )
        return out


def decisive(records: Sequence[LabelRecord]) -> list[LabelRecord]:
    return [r for r in records if r.vote in DECISIVE]
