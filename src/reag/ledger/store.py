"""The ledger store: events in, one recomputed result per case out, idempotently.

Recording an event upserts it under its id, reloads everything known for
the case, rebuilds the result with ``reag.ledger.outcome.build_result`` and
keeps it if it changed. The case row is locked first (``SELECT ... FOR
UPDATE`` on PostgreSQL; one writer at a time within a process for SQLite), so
ledger instances consuming different partitions never interleave on one case.
``record_many`` does this for many events in one transaction (the service
batches what arrives while a transaction runs, ``reag.ledger.batching``), and
``record`` for one: each event's update is the same either way.

Publishing is at-least-once: ``LedgerUpdate.publish`` is true when a complete
(or once-published) result changed, and also when the event was a duplicate,
because a redelivery usually means the previous publish was never
acknowledged. Consumers of ``reag.results.v1`` keep the latest result per key.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Self

from sqlalchemy import ColumnElement, Engine, delete, func, select
from sqlalchemy import case as when
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session, sessionmaker

from reag import metrics
from reag.ledger.outcome import CaseEvents, build_result
from reag.ledger.summary import (
    LABEL_NAMES,
    OUTCOME_NAMES,
    TierFigures,
    result_figures,
    summary_of,
)
from reag.ledger.tables import (
    LEDGER_TABLES,
    LedgerCaseCountsRow,
    LedgerCaseRow,
    LedgerCriterionRow,
    LedgerReviewRow,
    LedgerTierCountsRow,
)
from reag.storage import Base, make_engine
from reag.v1 import api_pb2
from reag.v1 import events_pb2 as pb

DEFAULT_PAGE = 100
MAX_PAGE = 1000
# Results whose summary figures a store opened on an older database fills in per batch.
BACKFILL_BATCH = 500


class LedgerError(Exception):
    """Base of the ledger's errors."""


class EventWithoutCaseError(LedgerError):
    """An event reached the store without the case id that keys everything."""


@dataclass(frozen=True, slots=True)
class Agreement:
    """A reviewer's label compared with an accepted verdict, for the agreement metric."""

    criterion_id: str
    reviewer: str
    tier: int
    agreed: bool


LedgerEvent = pb.Oracle | pb.Verdict | pb.Abstain | pb.Review
"""What the ledger records: every event type that changes a case."""


@dataclass(frozen=True, slots=True)
class LedgerUpdate:
    """What recording one event did to its case."""

    result: pb.Result
    changed: bool
    duplicate: bool
    publish: bool
    agreements: tuple[Agreement, ...] = field(default=())


def _now() -> datetime:
    return datetime.now(UTC)


def _bytes(message: pb.Verdict | pb.Abstain | pb.Review | pb.Oracle | pb.EventMeta) -> bytes:
    return message.SerializeToString(deterministic=True)


def _comparable(result: pb.Result | None) -> bytes | None:
    if result is None:
        return None
    copy = pb.Result()
    copy.CopyFrom(result)
    copy.meta.ClearField("created_at")
    return copy.SerializeToString(deterministic=True)


def _trim_oracle(oracle: pb.Oracle) -> pb.Oracle:
    """The retrieved documents' full text is audit material on the oracles topic, not a
    result's; the ledger keeps the intention (query, persona), the criteria, and which
    documents were retrieved with their scores, ranks and relevance verdicts, because
    retrieval is where oracles most often go wrong (REAG paper, failure analysis)."""
    kept = pb.Oracle()
    kept.CopyFrom(oracle)
    for document in kept.interpretation.documents:
        document.ClearField("content")
    return kept


@dataclass(frozen=True, slots=True)
class StuckCase:
    """A case whose oracle reached the ledger but whose result never completed."""

    case_id: str
    app: str
    run_id: str
    first_seen: datetime
    n_criteria: int
    decided: int  # criteria with a verdict or an abstain


Apply = Callable[[Session, LedgerCaseRow], bool]


def _put_figures(session: Session, case_id: str, result: pb.Result) -> None:
    """Replace the case's summary counts with ``result``'s (under the case's row lock)."""
    figures = result_figures(result)
    session.execute(delete(LedgerTierCountsRow).where(LedgerTierCountsRow.case_id == case_id))
    counts = session.get(LedgerCaseCountsRow, case_id)
    if counts is None:
        session.add(
            LedgerCaseCountsRow(
                case_id=case_id,
                criteria=figures.criteria,
                criteria_accepted=figures.criteria_accepted,
            )
        )
    else:
        counts.criteria, counts.criteria_accepted = figures.criteria, figures.criteria_accepted
    session.add_all(
        LedgerTierCountsRow(
            case_id=case_id,
            tier=number,
            requests=tier.requests,
            accepted=tier.accepted,
            escalated=tier.escalated,
            abstained=tier.abstained,
            cost_usd=tier.cost_usd,
        )
        for number, tier in figures.tiers.items()
    )


def _newer(row: LedgerReviewRow, reviewed_at: datetime | None, data: bytes) -> bool:
    """Whether the stored review outranks one made at ``reviewed_at`` encoded as ``data``.

    A review without a time is older than any with one; two without a time keep
    arrival order (the later wins), as nothing orders them.
    """
    stored_at = _aware(row.reviewed_at) if row.reviewed_at is not None else None
    if reviewed_at is None:
        return stored_at is not None
    if stored_at is None:
        return False
    return (stored_at, row.review) > (reviewed_at, data)


class LedgerStore:
    """Results of every app and run. One instance per process; sessions are short."""

    def __init__(self, engine: Engine) -> None:
        Base.metadata.create_all(engine, tables=list(LEDGER_TABLES))
        self._engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        # SQLite cannot upgrade a read snapshot to a write after another writer committed;
        # one writer at a time in this process avoids that. PostgreSQL needs no lock of
        # ours: each transaction locks its case row (SELECT ... FOR UPDATE) and the primary
        # keys refuse a second row, so writers on different cases run side by side.
        self._write_lock: AbstractContextManager[object] = (
            threading.Lock() if engine.dialect.name == "sqlite" else nullcontext()
        )

        self._backfill_figures()

    @classmethod
    def open(cls, dsn: str) -> Self:
        """Creates the ledger's tables if missing."""
        return cls(make_engine(dsn))

    def close(self) -> None:
        self._engine.dispose()

    # --- writes ------------------------------------------------------------------

    def record(self, event: LedgerEvent) -> LedgerUpdate:
        """Record one event in its own transaction."""
        return self.record_many([event])[0]

    def record_many(self, events: Sequence[LedgerEvent]) -> list[LedgerUpdate]:
        """Record ``events`` in one transaction; their updates, in the order given.

        They are applied in case-id order, each case's events in the order given:
        concurrent batches (other replicas) then lock cases in one order and never
        deadlock. Any failure rolls back all of them, so a caller that wants the
        good ones kept records them again one by one.
        """
        order = sorted(range(len(events)), key=lambda i: events[i].meta.case_id)
        done: dict[int, tuple[LedgerUpdate, bool]] = {}
        with self._write_lock, self._sessions.begin() as session:
            for i in order:
                meta, apply = self._change(events[i])
                done[i] = self._apply(session, meta, apply)
        updates = []
        for i, event in enumerate(events):
            update, newly_decided = done[i]
            self._count(event, update, newly_decided=newly_decided)
            updates.append(update)
        return updates

    def record_oracle(self, oracle: pb.Oracle) -> LedgerUpdate:
        return self.record(oracle)

    def record_verdict(self, verdict: pb.Verdict) -> LedgerUpdate:
        return self.record(verdict)

    def record_abstain(self, abstain: pb.Abstain) -> LedgerUpdate:
        return self.record(abstain)

    def record_review(self, review: pb.Review) -> LedgerUpdate:
        return self.record(review)

    def _change(self, event: LedgerEvent) -> tuple[pb.EventMeta, Apply]:
        """The event's change to its case, to apply inside a transaction."""
        if isinstance(event, pb.Oracle):
            return event.meta, self._oracle_change(event)
        if isinstance(event, pb.Verdict):
            return event.meta, self._verdict_change(event)
        if isinstance(event, pb.Abstain):
            return event.meta, self._abstain_change(event)
        return event.meta, self._review_change(event)

    @staticmethod
    def _oracle_change(oracle: pb.Oracle) -> Apply:
        data = _bytes(_trim_oracle(oracle))

        def apply(_session: Session, case: LedgerCaseRow) -> bool:
            duplicate = case.oracle == data
            case.oracle = data
            case.n_criteria = max(case.n_criteria, len(oracle.criteria))
            return duplicate

        return apply

    def _verdict_change(self, verdict: pb.Verdict) -> Apply:
        def apply(session: Session, case: LedgerCaseRow) -> bool:
            case.n_criteria = max(case.n_criteria, verdict.n_criteria)
            return self._put_criterion(session, case, verdict.criterion_id, verdict=verdict)

        return apply

    def _abstain_change(self, abstain: pb.Abstain) -> Apply:
        criterion_id = abstain.request.criterion.criterion_id

        def apply(session: Session, case: LedgerCaseRow) -> bool:
            case.n_criteria = max(case.n_criteria, abstain.request.n_criteria)
            return self._put_criterion(session, case, criterion_id, abstain=abstain)

        return apply

    @staticmethod
    def _review_change(review: pb.Review) -> Apply:
        """Keeps a reviewer's newest review of a criterion, by the review's own time.

        Reviews arrive in any order (a replay re-sends old ones), so a review older
        than the stored one changes nothing; a newer one replaces it and its
        agreement with the verdict is compared again. Equal times keep the larger
        encoding, so every arrival order ends with the same review.
        """
        data = _bytes(review)
        reviewed_at = (
            review.reviewed_at.ToDatetime(tzinfo=UTC) if review.HasField("reviewed_at") else None
        )

        def apply(session: Session, case: LedgerCaseRow) -> bool:
            row = session.get(LedgerReviewRow, (review.criterion_id, review.reviewer))
            if row is not None and (row.review == data or _newer(row, reviewed_at, data)):
                return True  # a replay, or an older review: the stored one stands
            if row is None:
                session.add(
                    LedgerReviewRow(
                        criterion_id=review.criterion_id,
                        reviewer=review.reviewer,
                        case_id=case.case_id,
                        app=case.app,
                        label=review.label,
                        review=data,
                        reviewed_at=reviewed_at,
                    )
                )
            else:
                row.label, row.review, row.reviewed_at = review.label, data, reviewed_at
                row.agreed = row.agreement_tier = None  # compared again with the verdict
            return False

        return apply

    def _put_criterion(
        self,
        session: Session,
        case: LedgerCaseRow,
        criterion_id: str,
        *,
        verdict: pb.Verdict | None = None,
        abstain: pb.Abstain | None = None,
    ) -> bool:
        if not criterion_id:
            raise EventWithoutCaseError(f"an event for case {case.case_id} has no criterion id")
        row = session.get(LedgerCriterionRow, criterion_id)
        if row is None:
            row = LedgerCriterionRow(
                criterion_id=criterion_id, case_id=case.case_id, updated_at=_now()
            )
            session.add(row)
        duplicate = False
        if verdict is not None:
            data = _bytes(verdict)
            duplicate = row.verdict == data
            row.verdict = data
        if abstain is not None:
            data = _bytes(abstain)
            duplicate = row.abstain == data
            row.abstain = data
        if not duplicate:
            row.updated_at = _now()
        return duplicate

    def _lock_case(self, session: Session, meta: pb.EventMeta) -> LedgerCaseRow:
        if not meta.case_id:
            raise EventWithoutCaseError("an event reached the ledger without meta.case_id")
        now = _now()
        values = {
            "case_id": meta.case_id,
            "app": meta.app,
            "run_id": meta.run_id,
            "meta": _bytes(meta),
            "first_seen": now,
            "updated_at": now,
            "n_criteria": 0,
            "outcome": 0,
            "complete": False,
            "total_cost_usd": 0.0,
            "published": False,
        }
        dialect = self._engine.dialect.name
        if dialect in ("postgresql", "sqlite"):
            insert = pg_insert if dialect == "postgresql" else sqlite_insert
            session.execute(insert(LedgerCaseRow).values(**values).on_conflict_do_nothing())
        elif session.get(LedgerCaseRow, meta.case_id) is None:
            session.add(LedgerCaseRow(**values))
            session.flush()
        case = session.execute(
            select(LedgerCaseRow).where(LedgerCaseRow.case_id == meta.case_id).with_for_update()
        ).scalar_one()
        if not case.run_id and meta.run_id:
            case.run_id = meta.run_id
            stored = pb.EventMeta.FromString(case.meta)
            stored.run_id = meta.run_id
            case.meta = _bytes(stored)
        return case

    def _events(self, session: Session, case: LedgerCaseRow) -> CaseEvents:
        events = CaseEvents(
            case_id=case.case_id,
            meta=pb.EventMeta.FromString(case.meta),
            oracle=pb.Oracle.FromString(case.oracle) if case.oracle is not None else None,
            n_criteria=case.n_criteria,
        )
        rows = session.scalars(
            select(LedgerCriterionRow).where(LedgerCriterionRow.case_id == case.case_id)
        )
        for row in rows:
            if row.verdict is not None:
                events.verdicts[row.criterion_id] = pb.Verdict.FromString(row.verdict)
            if row.abstain is not None:
                events.abstains[row.criterion_id] = pb.Abstain.FromString(row.abstain)
        for review in self._review_rows(session, case.case_id):
            events.reviews.setdefault(review.criterion_id, []).append(
                pb.Review.FromString(review.review)
            )
        return events

    @staticmethod
    def _review_rows(session: Session, case_id: str) -> Sequence[LedgerReviewRow]:
        return session.scalars(
            select(LedgerReviewRow).where(LedgerReviewRow.case_id == case_id)
        ).all()

    def _settle_agreements(self, session: Session, events: CaseEvents) -> tuple[Agreement, ...]:
        settled: list[Agreement] = []
        for row in self._review_rows(session, events.case_id):
            verdict = events.verdicts.get(row.criterion_id)
            if row.agreed is not None or verdict is None:
                continue
            row.agreed = row.label == verdict.label
            row.agreement_tier = verdict.tier
            settled.append(Agreement(row.criterion_id, row.reviewer, verdict.tier, row.agreed))
        return tuple(settled)

    def _apply(
        self, session: Session, meta: pb.EventMeta, apply: Apply
    ) -> tuple[LedgerUpdate, bool]:
        """One event's change and its case's new result, in ``session``; the update and
        whether the case was newly decided (for the metrics, counted after the commit)."""
        case = self._lock_case(session, meta)
        duplicate = apply(session, case)
        session.flush()
        events = self._events(session, case)
        agreements = self._settle_agreements(session, events)
        previous = pb.Result.FromString(case.result) if case.result is not None else None
        result = build_result(events)
        changed = _comparable(previous) != _comparable(result)
        if changed:
            now = _now()
            result.meta.created_at.FromDatetime(now)
            case.result = result.SerializeToString(deterministic=True)
            case.outcome, case.complete = result.outcome, result.complete
            case.total_cost_usd = result.total_cost_usd
            case.updated_at = now
            _put_figures(session, case.case_id, result)
        else:
            assert previous is not None  # a first build always differs from nothing
            result = previous
        publish = (result.complete or case.published) and (changed or duplicate)
        case.published = case.published or publish
        newly_decided = result.complete and (
            previous is None or not previous.complete or previous.outcome != result.outcome
        )
        return LedgerUpdate(result, changed, duplicate, publish, agreements), newly_decided

    @staticmethod
    def _count(event: LedgerEvent, update: LedgerUpdate, *, newly_decided: bool) -> None:
        """The metrics of one committed event."""
        for agreement in update.agreements:
            metrics.REVIEW_AGREEMENT.labels(
                str(agreement.tier), "true" if agreement.agreed else "false"
            ).inc()
        if newly_decided:
            result = update.result
            metrics.RESULTS.labels(
                result.meta.app,
                OUTCOME_NAMES[result.outcome],
                str(result.provisional).lower(),
            ).inc()
        if isinstance(event, pb.Review) and not update.duplicate:
            metrics.REVIEWS.labels(event.meta.app, LABEL_NAMES.get(event.label, "-")).inc()

    # --- reads -------------------------------------------------------------------

    def get_oracle(self, case_id: str) -> pb.Oracle | None:
        """The case's oracle as stored (documents without their text), once it has arrived."""
        with self._sessions() as session:
            case = session.get(LedgerCaseRow, case_id)
            if case is None or case.oracle is None:
                return None
            return pb.Oracle.FromString(case.oracle)

    def get_result(self, case_id: str) -> pb.Result | None:
        with self._sessions() as session:
            case = session.get(LedgerCaseRow, case_id)
            if case is None or case.result is None:
                return None
            return pb.Result.FromString(case.result)

    def list_results(
        self,
        *,
        app: str | None = None,
        run_id: str | None = None,
        outcome: int | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[pb.Result]:
        """Oldest case first; ``limit`` None lists every match."""
        query = select(LedgerCaseRow.result).where(LedgerCaseRow.result.is_not(None))
        if app:
            query = query.where(LedgerCaseRow.app == app)
        if run_id:
            query = query.where(LedgerCaseRow.run_id == run_id)
        if outcome is not None:
            query = query.where(LedgerCaseRow.outcome == outcome)
        query = query.order_by(LedgerCaseRow.first_seen, LedgerCaseRow.case_id).offset(offset)
        if limit is not None:
            query = query.limit(limit)
        with self._sessions() as session:
            return [pb.Result.FromString(data) for data in session.scalars(query) if data]

    def summary(self, *, app: str | None = None, run_id: str | None = None) -> api_pb2.Summary:
        """The run's figures, added up in SQL from the columns and counts kept beside each
        result; no result is loaded, so it costs the same for ten cases or a million."""
        scope: list[ColumnElement[bool]] = [LedgerCaseRow.result.is_not(None)]
        if app:
            scope.append(LedgerCaseRow.app == app)
        if run_id:
            scope.append(LedgerCaseRow.run_id == run_id)

        def count(outcome: int) -> Any:
            return func.coalesce(func.sum(when((LedgerCaseRow.outcome == outcome, 1), else_=0)), 0)

        counts, tiers = LedgerCaseCountsRow, LedgerTierCountsRow
        with self._sessions() as session:
            cases = session.execute(
                select(
                    func.count(),
                    count(pb.OUTCOME_PASS),
                    count(pb.OUTCOME_FAIL),
                    count(pb.OUTCOME_ABSTAIN),
                    func.coalesce(func.sum(LedgerCaseRow.total_cost_usd), 0.0),
                ).where(*scope)
            ).one()
            criteria = session.execute(
                select(
                    func.coalesce(func.sum(counts.criteria), 0),
                    func.coalesce(func.sum(counts.criteria_accepted), 0),
                )
                .join(LedgerCaseRow, LedgerCaseRow.case_id == counts.case_id)
                .where(*scope)
            ).one()
            per_tier = session.execute(
                select(
                    tiers.tier,
                    func.sum(tiers.requests),
                    func.sum(tiers.accepted),
                    func.sum(tiers.escalated),
                    func.sum(tiers.abstained),
                    func.sum(tiers.cost_usd),
                )
                .join(LedgerCaseRow, LedgerCaseRow.case_id == tiers.case_id)
                .where(*scope)
                .group_by(tiers.tier)
            ).all()
        return summary_of(
            cases=int(cases[0]),
            passed=int(cases[1]),
            failed=int(cases[2]),
            abstained=int(cases[3]),
            total_cost_usd=float(cases[4]),
            criteria=int(criteria[0]),
            criteria_accepted=int(criteria[1]),
            tiers={
                int(row[0]): TierFigures(
                    int(row[1]), int(row[2]), int(row[3]), int(row[4]), float(row[5])
                )
                for row in per_tier
            },
        )

    def _backfill_figures(self) -> None:
        """Fill in the summary counts of results stored before they were kept (once)."""
        missing = (
            select(LedgerCaseRow.case_id, LedgerCaseRow.result)
            .outerjoin(LedgerCaseCountsRow, LedgerCaseCountsRow.case_id == LedgerCaseRow.case_id)
            .where(LedgerCaseRow.result.is_not(None), LedgerCaseCountsRow.case_id.is_(None))
            .limit(BACKFILL_BATCH)
        )
        while True:
            with self._write_lock, self._sessions.begin() as session:
                rows = session.execute(missing).all()
                for case_id, data in rows:
                    _put_figures(session, case_id, pb.Result.FromString(data or b""))
            if len(rows) < BACKFILL_BATCH:
                return

    def reviews(self, criterion_id: str) -> list[pb.Review]:
        with self._sessions() as session:
            rows = session.scalars(
                select(LedgerReviewRow)
                .where(LedgerReviewRow.criterion_id == criterion_id)
                .order_by(LedgerReviewRow.reviewer)
            )
            return [pb.Review.FromString(row.review) for row in rows]

    def agreement(self, criterion_id: str) -> list[Agreement]:
        """Stored comparisons of reviews with this criterion's accepted verdict."""
        with self._sessions() as session:
            rows = session.scalars(
                select(LedgerReviewRow).where(
                    LedgerReviewRow.criterion_id == criterion_id,
                    LedgerReviewRow.agreed.is_not(None),
                )
            )
            return [
                Agreement(row.criterion_id, row.reviewer, row.agreement_tier or 0, bool(row.agreed))
                for row in rows
            ]

    # --- cases lost in flight ----------------------------------------------------------

    @staticmethod
    def _stuck_filter(older_than_s: float, now: datetime | None) -> list[ColumnElement[bool]]:
        cutoff = (now or _now()) - timedelta(seconds=older_than_s)
        return [
            LedgerCaseRow.oracle.is_not(None),
            LedgerCaseRow.complete.is_(False),
            LedgerCaseRow.first_seen < cutoff,
        ]

    def stuck_cases(
        self,
        older_than_s: float,
        *,
        app: str | None = None,
        now: datetime | None = None,
        limit: int | None = None,
    ) -> list[StuckCase]:
        """Cases started (their oracle is here) more than ``older_than_s`` ago and still not
        complete, oldest first. On at-least-once delivery a case only stays so when its
        events were lost, which the embedded broker does when it restarts."""
        decided = (
            select(LedgerCriterionRow.case_id, func.count().label("decided"))
            .where(
                (LedgerCriterionRow.verdict.is_not(None))
                | (LedgerCriterionRow.abstain.is_not(None))
            )
            .group_by(LedgerCriterionRow.case_id)
            .subquery()
        )
        query = (
            select(
                LedgerCaseRow.case_id,
                LedgerCaseRow.app,
                LedgerCaseRow.run_id,
                LedgerCaseRow.first_seen,
                LedgerCaseRow.n_criteria,
                func.coalesce(decided.c.decided, 0),
            )
            .outerjoin(decided, decided.c.case_id == LedgerCaseRow.case_id)
            .where(*self._stuck_filter(older_than_s, now))
            .order_by(LedgerCaseRow.first_seen, LedgerCaseRow.case_id)
        )
        if app:
            query = query.where(LedgerCaseRow.app == app)
        if limit is not None:
            query = query.limit(limit)
        with self._sessions() as session:
            return [
                StuckCase(case_id, case_app, run, _aware(seen), n, int(done))
                for case_id, case_app, run, seen, n, done in session.execute(query)
            ]

    def stuck_counts(self, older_than_s: float, *, now: datetime | None = None) -> dict[str, int]:
        """Stuck cases of every app the ledger knows, 0 included, counted in SQL (the ledger's
        ``reag_cases_stuck`` gauge: a series at 0 shows the count is being kept)."""
        query = (
            select(LedgerCaseRow.app, func.count())
            .where(*self._stuck_filter(older_than_s, now))
            .group_by(LedgerCaseRow.app)
        )
        with self._sessions() as session:
            counts = dict.fromkeys(session.scalars(select(LedgerCaseRow.app).distinct()), 0)
            counts.update({app: int(n) for app, n in session.execute(query)})
            return counts


def _aware(moment: datetime) -> datetime:
    """SQLite hands back naive datetimes for timezone-aware columns; they were stored in UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
