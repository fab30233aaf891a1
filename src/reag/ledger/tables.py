"""The ledger's tables on ``reag.storage.Base``: cases, criteria, reviews.

Events are kept as their protobuf bytes (the contract is the schema), with
the few columns the queries filter on beside them. Each row is keyed by the
id that makes a redelivered event an upsert of itself: the case id, the
criterion id, and (criterion id, reviewer) for labels.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, DateTime, Float, Integer, LargeBinary, String, Table
from sqlalchemy.orm import Mapped, mapped_column

from reag.storage import Base

_ID = 400  # case ids are "<app>-<16 hex>", criterion ids add "/c<n>"; room for other id schemes


class LedgerCaseRow(Base):
    __tablename__ = "ledger_cases"

    case_id: Mapped[str] = mapped_column(String(_ID), primary_key=True)
    app: Mapped[str] = mapped_column(String(200), index=True)
    run_id: Mapped[str] = mapped_column(String(200), index=True, default="")
    meta: Mapped[bytes] = mapped_column(LargeBinary)  # pb.EventMeta first seen
    oracle: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    n_criteria: Mapped[int] = mapped_column(Integer, default=0)
    outcome: Mapped[int] = mapped_column(Integer, index=True, default=0)  # pb.Outcome
    complete: Mapped[bool] = mapped_column(Boolean, default=False)
    total_cost_usd: Mapped[float] = mapped_column(Float, default=0.0)
    result: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)  # pb.Result
    published: Mapped[bool] = mapped_column(Boolean, default=False)
    first_seen: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class LedgerCriterionRow(Base):
    __tablename__ = "ledger_criteria"

    criterion_id: Mapped[str] = mapped_column(String(_ID), primary_key=True)
    case_id: Mapped[str] = mapped_column(String(_ID), index=True)
    verdict: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)  # pb.Verdict
    abstain: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)  # pb.Abstain
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class LedgerReviewRow(Base):
    __tablename__ = "ledger_reviews"

    criterion_id: Mapped[str] = mapped_column(String(_ID), primary_key=True)
    reviewer: Mapped[str] = mapped_column(String(200), primary_key=True)
    case_id: Mapped[str] = mapped_column(String(_ID), index=True)
    app: Mapped[str] = mapped_column(String(200), index=True)
    label: Mapped[int] = mapped_column(Integer)  # pb.Label
    review: Mapped[bytes] = mapped_column(LargeBinary)  # pb.Review
    reviewed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # Set once the label has been compared with an accepted verdict (the agreement metric).
    agreement_tier: Mapped[int | None] = mapped_column(Integer, nullable=True)
    agreed: Mapped[bool | None] = mapped_column(Boolean, nullable=True)


class LedgerCaseCountsRow(Base):
    """A result's criteria counts (reag.ledger.summary.result_figures), kept beside it so
    a summary is a SQL sum: criteria that left the cascade, and those a judge accepted."""

    __tablename__ = "ledger_case_counts"

    case_id: Mapped[str] = mapped_column(String(_ID), primary_key=True)
    criteria: Mapped[int] = mapped_column(Integer, default=0)
    criteria_accepted: Mapped[int] = mapped_column(Integer, default=0)


class LedgerTierCountsRow(Base):
    """What one tier did for one case's criteria, for the summary's per-tier lines."""

    __tablename__ = "ledger_tier_counts"

    case_id: Mapped[str] = mapped_column(String(_ID), primary_key=True)
    tier: Mapped[int] = mapped_column(Integer, primary_key=True)
    requests: Mapped[int] = mapped_column(Integer, default=0)
    accepted: Mapped[int] = mapped_column(Integer, default=0)
    escalated: Mapped[int] = mapped_column(Integer, default=0)
    abstained: Mapped[int] = mapped_column(Integer, default=0)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0)


LEDGER_TABLES: tuple[Table, ...] = tuple(
    Base.metadata.tables[row.__tablename__]
    for row in (
        LedgerCaseRow,
        LedgerCriterionRow,
        LedgerReviewRow,
        LedgerCaseCountsRow,
        LedgerTierCountsRow,
    )
)
