"""Per-app LLM spend in the SQL store, so one budget holds across every service.

Each service charges the calls it makes for an app's events to that app
(``reag.llm.accounting.charged_to``) and appends what it spent every few
seconds (:meth:`SpendStore.add`); the elicitor reads the last hour's sum
before it admits more of that app's traffic. Appending rows (no shared row
to update) keeps concurrent writers from different services out of each
other's way; rows older than a day are pruned.

The LLM spend budget (``REAG_LLM_BUDGET_USD``) lives here too, per app and
hour (:class:`HourlyBudget`): one row per (app, hour) that every replica adds
to with one atomic statement after each priced call and reads before the
next, so replicas share it and a restart keeps it. The read and the add are
separate, so the budget can be overrun by the calls in flight when it is
reached (one call each), never by more.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import DateTime, Float, Integer, String, delete, func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Mapped, Session, mapped_column, sessionmaker

from reag.llm.accounting import AppSpend
from reag.storage import Base, open_store

log = logging.getLogger("reag.spend")

BUDGET_KEPT = timedelta(days=2)
"""How long an hour's budget row is kept after its hour."""


class AppSpendRow(Base):
    __tablename__ = "app_spend"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    app: Mapped[str] = mapped_column(String(200), index=True)
    service: Mapped[str] = mapped_column(String(100))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    calls: Mapped[int] = mapped_column(Integer)
    cost_usd: Mapped[float] = mapped_column(Float)
    compute_s: Mapped[float] = mapped_column(Float)


class BudgetHourRow(Base):
    """What one app spent on LLM calls in one clock hour (UTC), every replica together."""

    __tablename__ = "llm_budget_hours"

    app: Mapped[str] = mapped_column(String(200), primary_key=True)
    hour: Mapped[str] = mapped_column(String(13), primary_key=True)  # 2026-01-02T13
    cost_usd: Mapped[float] = mapped_column(Float)


def hour_of(moment: datetime) -> str:
    """The budget's hour key of ``moment``: its UTC date and hour, e.g. ``2026-01-02T13``."""
    return _aware(moment).astimezone(UTC).strftime("%Y-%m-%dT%H")


@dataclass(frozen=True, slots=True)
class WindowSpend:
    calls: int
    cost_usd: float
    compute_s: float


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)


class SpendStore:
    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    @classmethod
    def open(cls, dsn: str) -> SpendStore:
        return cls(open_store(dsn))

    def add(
        self, service: str, spend: Mapping[str, AppSpend], *, at: datetime | None = None
    ) -> None:
        at = at or datetime.now(UTC)
        rows = [
            AppSpendRow(
                app=app,
                service=service,
                at=at,
                calls=s.calls,
                cost_usd=s.cost_usd,
                compute_s=s.compute_s,
            )
            for app, s in spend.items()
            if s.calls
        ]
        if not rows:
            return
        with self._sessions.begin() as session:
            session.add_all(rows)
            session.execute(delete(AppSpendRow).where(AppSpendRow.at < at - timedelta(days=1)))
            session.execute(
                delete(BudgetHourRow).where(BudgetHourRow.hour < hour_of(at - BUDGET_KEPT))
            )

    def window(
        self, app: str, *, seconds: float = 3600.0, now: datetime | None = None
    ) -> WindowSpend:
        """What ``app`` spent in the last ``seconds``, every service together."""
        since = _aware(now or datetime.now(UTC)) - timedelta(seconds=seconds)
        with self._sessions() as session:
            calls, usd, compute = session.execute(
                select(
                    func.coalesce(func.sum(AppSpendRow.calls), 0),
                    func.coalesce(func.sum(AppSpendRow.cost_usd), 0.0),
                    func.coalesce(func.sum(AppSpendRow.compute_s), 0.0),
                ).where(AppSpendRow.app == app, AppSpendRow.at >= since)
            ).one()
        return WindowSpend(int(calls), float(usd), float(compute))


class HourlyBudget:
    """The LLM spend budget per app and hour in the SQL store (a ``SharedBudget``).

    ``charge`` is one atomic upsert (``INSERT ... ON CONFLICT DO UPDATE SET
    cost_usd = cost_usd + :usd``), so concurrent replicas never lose each other's
    spend. A store fault while charging must not undo a call that was made and
    paid for: the amount is kept and added with the next charge. A store fault
    while reading propagates, a transient fault like any other store outage.
    The store is opened on first use.
    """

    def __init__(self, dsn: str, *, clock: Callable[[], datetime] | None = None) -> None:
        self._dsn = dsn
        self._clock = clock or (lambda: datetime.now(UTC))
        self._sessions: sessionmaker[Session] | None = None
        self._lock = threading.Lock()
        self._unsaved: dict[tuple[str, str], float] = {}

    def _open(self) -> sessionmaker[Session]:
        if self._sessions is None:
            self._sessions = open_store(self._dsn)
        return self._sessions

    def spent(self, app: str) -> float:
        hour = hour_of(self._clock())
        with self._open()() as session:
            stored = session.get(BudgetHourRow, (app, hour))
            total = stored.cost_usd if stored is not None else 0.0
        with self._lock:
            return total + self._unsaved.get((app, hour), 0.0)

    def charge(self, app: str, usd: float) -> float:
        """Adds ``usd`` to ``app``'s hour and returns the hour's new total.

        Amounts kept from earlier store faults (any app, any hour) go with it.
        While the store is down, returns what this process has kept for the hour.
        """
        hour = hour_of(self._clock())
        with self._lock:
            pending, self._unsaved = self._unsaved, {}
        pending[(app, hour)] = pending.get((app, hour), 0.0) + usd
        total = 0.0
        failed: SQLAlchemyError | None = None
        for (pending_app, pending_hour), amount in pending.items():
            try:
                added = self._add(pending_app, pending_hour, amount)
            except SQLAlchemyError as exc:
                failed = exc
                with self._lock:
                    key = (pending_app, pending_hour)
                    self._unsaved[key] = self._unsaved.get(key, 0.0) + amount
                continue
            if (pending_app, pending_hour) == (app, hour):
                total = added
        if failed is not None:
            log.warning(
                "could not charge the LLM budget (%s); kept for the next call",
                type(failed).__name__,
            )
            with self._lock:
                return total or self._unsaved.get((app, hour), 0.0)
        return total

    def _add(self, app: str, hour: str, usd: float) -> float:
        sessions = self._open()
        with sessions.begin() as session:
            dialect = session.get_bind().dialect.name
            insert = pg_insert if dialect == "postgresql" else sqlite_insert
            row = insert(BudgetHourRow).values(app=app, hour=hour, cost_usd=usd)
            upsert = row.on_conflict_do_update(
                index_elements=[BudgetHourRow.app, BudgetHourRow.hour],
                set_={"cost_usd": BudgetHourRow.cost_usd + row.excluded.cost_usd},
            ).returning(BudgetHourRow.cost_usd)
            return float(session.execute(upsert).scalar_one())
