"""Per-app LLM spend in the SQL store, so one budget holds across every service.

Each service charges the calls it makes for an app's events to that app
(``reag.llm.accounting.charged_to``) and appends what it spent every few
seconds (:meth:`SpendStore.add`); the elicitor reads the last hour's sum
before it admits more of that app's traffic. Appending rows (no shared row
to update) keeps concurrent writers from different services out of each
other's way; rows older than a day are pruned.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import DateTime, Float, Integer, String, delete, func, select
from sqlalchemy.orm import Mapped, Session, mapped_column, sessionmaker

from reag.llm.accounting import AppSpend
from reag.storage import Base, open_store


class AppSpendRow(Base):
    __tablename__ = "app_spend"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    app: Mapped[str] = mapped_column(String(200), index=True)
    service: Mapped[str] = mapped_column(String(100))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    calls: Mapped[int] = mapped_column(Integer)
    cost_usd: Mapped[float] = mapped_column(Float)
    compute_s: Mapped[float] = mapped_column(Float)


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
