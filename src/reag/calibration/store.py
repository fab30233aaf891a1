"""The durable calibration store: labelled items, judge scores, thresholds.

The embedded broker forgets everything on restart and production judges cost
money, so what calibration needs lives in the SQL store (SQLite embedded,
PostgreSQL by DSN):

- labelled items per app, from a labelled file or from reviewers (one row per
  item id; a criterion reviewed twice stays one item);
- every judge score per (app, tier, model, prompt version, item), so no judge
  call on a calibration item is ever made twice;
- every threshold ever computed (the history), the latest per tier being the
  one republished when the calibrator starts.

The annotators' example sets drawn from these items are pinned in the same
database, but by ``reag.judging.pinning``: they are part of the judge's
prompt, and this package, which the judges import, must not import them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    func,
    select,
)
from sqlalchemy.orm import Mapped, Session, mapped_column, sessionmaker

from reag.calibration.scores import Label, ScoreRecord
from reag.storage import Base, open_store
from reag.v1 import events_pb2 as pb

Source = Literal["file", "review", "audit"]
# Labels that are a uniform sample of traffic: a labelled file (the calibration set, or
# any uniform sample a team labels) and audits (reag.trust.audit). Reviewed abstentions
# ("review") are the items no tier accepted, harder than traffic: they join the
# annotators' example pool but never the risk estimate (docs/calibration.md).
EXCHANGEABLE: tuple[Source, ...] = ("file", "audit")


def _utc(value: datetime) -> datetime:
    """SQLite hands back naive datetimes; everything stored is UTC."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


class CalibrationItemRow(Base):
    __tablename__ = "calibration_items"
    __table_args__ = (UniqueConstraint("app", "item_id", name="uq_calibration_item"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    app: Mapped[str] = mapped_column(String(200), index=True)
    item_id: Mapped[str] = mapped_column(String(400))
    label: Mapped[str] = mapped_column(String(3))
    persona_category: Mapped[str] = mapped_column(String(200))
    source: Mapped[str] = mapped_column(String(16))
    request_pb: Mapped[bytes] = mapped_column(LargeBinary)
    explanation: Mapped[str] = mapped_column(Text, default="")
    reviewer: Mapped[str] = mapped_column(String(200), default="")
    added_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class JudgeScoreRow(Base):
    __tablename__ = "judge_scores"
    __table_args__ = (
        UniqueConstraint(
            "app", "tier", "model", "prompt_version", "item_id", name="uq_judge_score"
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    app: Mapped[str] = mapped_column(String(200), index=True)
    tier: Mapped[int] = mapped_column(Integer)
    model: Mapped[str] = mapped_column(String(200))
    prompt_version: Mapped[str] = mapped_column(String(200))
    item_id: Mapped[str] = mapped_column(String(400))
    verdict: Mapped[str] = mapped_column(String(3))
    confidence: Mapped[float] = mapped_column(Float)
    annotator_yes: Mapped[list[float]] = mapped_column(JSON)
    method: Mapped[str] = mapped_column(String(16))
    cost_usd: Mapped[float] = mapped_column(Float)
    prompt_tokens: Mapped[int] = mapped_column(Integer)
    completion_tokens: Mapped[int] = mapped_column(Integer)
    latency_s: Mapped[float] = mapped_column(Float)
    n_calls: Mapped[int] = mapped_column(Integer)
    # Set when the score was copied from another tier running the same model and
    # prompt (identical calls): cost is still what this tier's call would cost.
    copied_from_tier: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ThresholdRow(Base):
    __tablename__ = "calibration_thresholds"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    app: Mapped[str] = mapped_column(String(200), index=True)
    tier: Mapped[int] = mapped_column(Integer)
    model: Mapped[str] = mapped_column(String(200))
    prompt_version: Mapped[str] = mapped_column(String(200))
    has_threshold: Mapped[bool] = mapped_column(Boolean)
    threshold: Mapped[float | None] = mapped_column(Float, nullable=True)
    mode: Mapped[str] = mapped_column(String(16))
    calibration_hash: Mapped[str] = mapped_column(String(64))
    trigger: Mapped[str] = mapped_column(String(32))
    threshold_pb: Mapped[bytes] = mapped_column(LargeBinary)
    computed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)


@dataclass(frozen=True, slots=True)
class CalibrationItem:
    """A labelled criterion–response pair; ``request`` is what a judge is shown."""

    app: str
    item_id: str
    label: Label
    persona_category: str
    request: pb.JudgeRequest = field(compare=False)
    source: Source = "file"
    explanation: str = ""
    reviewer: str = ""
    # When the label was given (a review's own time); None: now, when it is added.
    labelled_at: datetime | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class AddReport:
    """What ``add_items`` did, by item id. Relabelled items keep their place in time."""

    added: list[str]
    relabelled: list[str]
    unchanged: list[str]


@dataclass(frozen=True, slots=True)
class StoredScore:
    """One tier's stored judgement of one calibration item."""

    app: str
    tier: int
    model: str
    prompt_version: str
    item_id: str
    verdict: Label
    confidence: float
    annotator_yes: tuple[float, ...]
    method: str
    cost_usd: float
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    n_calls: int
    copied_from_tier: int | None = None

    def record(self, item: CalibrationItem) -> ScoreRecord:
        return ScoreRecord(
            item_id=self.item_id,
            tier=self.tier,
            verdict=self.verdict,
            confidence=min(1.0, max(0.0, self.confidence)),
            label=item.label,
            persona_category=item.persona_category or None,
            cost_usd=self.cost_usd,
        )


def _as_label(value: str) -> Label:
    if value == "YES":
        return "YES"
    if value == "NO":
        return "NO"
    raise ValueError(f"stored label {value!r} is neither YES nor NO")


def _item(row: CalibrationItemRow) -> CalibrationItem:
    source: Source = row.source if row.source in ("review", "audit") else "file"  # type: ignore[assignment]
    return CalibrationItem(
        app=row.app,
        item_id=row.item_id,
        label=_as_label(row.label),
        persona_category=row.persona_category,
        request=pb.JudgeRequest.FromString(row.request_pb),
        source=source,
        explanation=row.explanation,
        reviewer=row.reviewer,
    )


def _score(row: JudgeScoreRow) -> StoredScore:
    return StoredScore(
        app=row.app,
        tier=row.tier,
        model=row.model,
        prompt_version=row.prompt_version,
        item_id=row.item_id,
        verdict=_as_label(row.verdict),
        confidence=row.confidence,
        annotator_yes=tuple(float(p) for p in row.annotator_yes),
        method=row.method,
        cost_usd=row.cost_usd,
        prompt_tokens=row.prompt_tokens,
        completion_tokens=row.completion_tokens,
        latency_s=row.latency_s,
        n_calls=row.n_calls,
        copied_from_tier=row.copied_from_tier,
    )


def item_from_review(review: pb.Review) -> CalibrationItem:
    """A reviewed criterion as a calibration item; its id is the criterion id.

    An audit (picked at random before any tier decided) is exchangeable with traffic
    and is stored as ``audit``; any other review is a reviewed abstention, ``review``.
    """
    request = pb.JudgeRequest()
    request.CopyFrom(review.item)
    del request.history[:]  # the tiers' opinions are not part of the item
    return CalibrationItem(
        app=review.meta.app or request.meta.app,
        item_id=review.criterion_id,
        label="YES" if review.label == pb.LABEL_YES else "NO",
        persona_category=request.persona.category_id,
        request=request,
        source="audit" if review.item.audit else "review",
        explanation=review.comment,
        reviewer=review.reviewer,
        labelled_at=review.reviewed_at.ToDatetime(tzinfo=UTC)
        if review.HasField("reviewed_at")
        else None,
    )


class CalibrationStore:
    """Calibration state of every app; one instance per process (sessions are short)."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    @classmethod
    def open(cls, dsn: str) -> CalibrationStore:
        return cls(open_store(dsn))

    @property
    def sessions(self) -> sessionmaker[Session]:
        """The store's session factory, for the judges' annotator pins kept in the same database."""
        return self._sessions

    # --- labelled items -------------------------------------------------------------
    def add_items(self, items: Iterable[CalibrationItem]) -> AddReport:
        """Insert new items; a known item whose label changed takes the new label.

        Unless the new label is older: a row's ``updated_at`` is the time of its
        label (a review's own time, else when it was added), and a label given
        before it (a replayed older review) leaves the item as it is.
        """
        now = datetime.now(UTC)
        added: list[str] = []
        relabelled: list[str] = []
        unchanged: list[str] = []
        with self._sessions.begin() as session:
            for item in items:
                row = session.scalars(
                    select(CalibrationItemRow).where(
                        CalibrationItemRow.app == item.app,
                        CalibrationItemRow.item_id == item.item_id,
                    )
                ).one_or_none()
                if row is None:
                    session.add(
                        CalibrationItemRow(
                            app=item.app,
                            item_id=item.item_id,
                            label=item.label,
                            persona_category=item.persona_category,
                            source=item.source,
                            request_pb=item.request.SerializeToString(deterministic=True),
                            explanation=item.explanation,
                            reviewer=item.reviewer,
                            added_at=now,
                            updated_at=item.labelled_at or now,
                        )
                    )
                    session.flush()
                    added.append(item.item_id)
                    continue
                labelled_at = item.labelled_at or now
                if labelled_at < _utc(row.updated_at):
                    unchanged.append(item.item_id)  # an older label: the stored one stands
                elif row.label != item.label:
                    row.label, row.updated_at = item.label, labelled_at
                    row.explanation = item.explanation or row.explanation
                    row.reviewer = item.reviewer or row.reviewer
                    relabelled.append(item.item_id)
                else:
                    row.updated_at = labelled_at
                    unchanged.append(item.item_id)
        return AddReport(added, relabelled, unchanged)

    def items(self, app: str, *, sources: Sequence[Source] | None = None) -> list[CalibrationItem]:
        """The app's items, or only those from ``sources`` (``EXCHANGEABLE`` for fitting)."""
        with self._sessions() as session:
            query = select(CalibrationItemRow).where(CalibrationItemRow.app == app)
            if sources is not None:
                query = query.where(CalibrationItemRow.source.in_(sources))
            rows = session.scalars(query.order_by(CalibrationItemRow.item_id)).all()
            return [_item(r) for r in rows]

    def count_items(
        self,
        app: str,
        *,
        added_after: datetime | None = None,
        sources: Sequence[Source] | None = None,
    ) -> int:
        with self._sessions() as session:
            query = (
                select(func.count())
                .select_from(CalibrationItemRow)
                .where(CalibrationItemRow.app == app)
            )
            if sources is not None:
                query = query.where(CalibrationItemRow.source.in_(sources))
            if added_after is not None:
                query = query.where(CalibrationItemRow.added_at > added_after)
            return int(session.scalar(query) or 0)

    def apps(self) -> list[str]:
        with self._sessions() as session:
            return sorted(session.scalars(select(CalibrationItemRow.app).distinct()).all())

    # --- judge scores ----------------------------------------------------------------------
    def scores(
        self, app: str, tier: int, model: str, prompt_version: str
    ) -> dict[str, StoredScore]:
        with self._sessions() as session:
            rows = session.scalars(
                select(JudgeScoreRow).where(
                    JudgeScoreRow.app == app,
                    JudgeScoreRow.tier == tier,
                    JudgeScoreRow.model == model,
                    JudgeScoreRow.prompt_version == prompt_version,
                )
            ).all()
            return {r.item_id: _score(r) for r in rows}

    def scores_any_tier(self, app: str, model: str, prompt_version: str) -> dict[str, StoredScore]:
        """Scores of this model and prompt at any tier, the lowest tier's per item."""
        with self._sessions() as session:
            rows = session.scalars(
                select(JudgeScoreRow)
                .where(
                    JudgeScoreRow.app == app,
                    JudgeScoreRow.model == model,
                    JudgeScoreRow.prompt_version == prompt_version,
                )
                .order_by(JudgeScoreRow.tier.desc())
            ).all()
            return {r.item_id: _score(r) for r in rows}

    def put_scores(self, scores: Sequence[StoredScore]) -> None:
        now = datetime.now(UTC)
        with self._sessions.begin() as session:
            for s in scores:
                session.add(
                    JudgeScoreRow(
                        app=s.app,
                        tier=s.tier,
                        model=s.model,
                        prompt_version=s.prompt_version,
                        item_id=s.item_id,
                        verdict=s.verdict,
                        confidence=s.confidence,
                        annotator_yes=list(s.annotator_yes),
                        method=s.method,
                        cost_usd=s.cost_usd,
                        prompt_tokens=s.prompt_tokens,
                        completion_tokens=s.completion_tokens,
                        latency_s=s.latency_s,
                        n_calls=s.n_calls,
                        copied_from_tier=s.copied_from_tier,
                        created_at=now,
                    )
                )

    # --- thresholds history -------------------------------------------------------------------
    def record_thresholds(
        self, thresholds: Sequence[pb.Threshold], *, prompt_version: str, trigger: str
    ) -> None:
        with self._sessions.begin() as session:
            for t in thresholds:
                session.add(
                    ThresholdRow(
                        app=t.app,
                        tier=t.tier,
                        model=t.model,
                        prompt_version=prompt_version,
                        has_threshold=t.has_threshold,
                        threshold=t.threshold if t.has_threshold else None,
                        mode=t.mode,
                        calibration_hash=t.calibration_hash,
                        trigger=trigger,
                        threshold_pb=t.SerializeToString(deterministic=True),
                        computed_at=t.computed_at.ToDatetime(tzinfo=UTC),
                    )
                )

    def threshold_history(self, app: str, tier: int | None = None) -> list[pb.Threshold]:
        """Every threshold computed for ``app`` (optionally one tier), oldest first."""
        with self._sessions() as session:
            query = select(ThresholdRow).where(ThresholdRow.app == app)
            if tier is not None:
                query = query.where(ThresholdRow.tier == tier)
            rows = session.scalars(query.order_by(ThresholdRow.id)).all()
            return [pb.Threshold.FromString(r.threshold_pb) for r in rows]

    def latest_thresholds(self, app: str | None = None) -> list[pb.Threshold]:
        """The newest threshold per (app, tier): what the judges should hold now."""
        with self._sessions() as session:
            query = select(ThresholdRow)
            if app is not None:
                query = query.where(ThresholdRow.app == app)
            rows = session.scalars(query.order_by(ThresholdRow.id)).all()
        latest: dict[tuple[str, int], bytes] = {}
        for row in rows:
            latest[(row.app, row.tier)] = row.threshold_pb
        return [pb.Threshold.FromString(latest[key]) for key in sorted(latest)]

    def threshold_prompt_versions(self, app: str) -> dict[int, str]:
        """The prompt version (with N, K and the example sets' digest) of each tier's newest
        threshold: the key its calibration scores are stored under."""
        with self._sessions() as session:
            rows = session.scalars(
                select(ThresholdRow).where(ThresholdRow.app == app).order_by(ThresholdRow.id)
            ).all()
        return {row.tier: row.prompt_version for row in rows}

    def last_calibrated_at(self, app: str) -> datetime | None:
        with self._sessions() as session:
            value = session.scalar(
                select(func.max(ThresholdRow.computed_at)).where(ThresholdRow.app == app)
            )
        return _utc(value) if value is not None else None
