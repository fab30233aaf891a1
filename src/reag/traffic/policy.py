"""Per-app traffic policy: what is redacted and how much shadow traffic reag takes.

An app declares it in its manifest (``traffic:``); ``reag corpus add`` stores it
beside the corpus, and the ingesting services read it from the store with a
short cache, so an operator changes sampling or budgets without a restart. An
app with no stored policy gets the default: every built-in recogniser, all
traffic, no budget.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Literal, Protocol

from pydantic import BaseModel, Field
from sqlalchemy import JSON, DateTime, String, select
from sqlalchemy.orm import Mapped, Session, mapped_column, sessionmaker

from reag.storage import Base, open_store
from reag.traffic.redaction import RedactionPolicy, Redactor
from reag.v1 import events_pb2 as pb


class ShadowPolicy(BaseModel):
    """How much live traffic one app sends on to the LLM stages (docs/integrating.md)."""

    sample_rate: float = Field(
        default=1.0, ge=0.0, le=1.0, description="Share of users (or requests) kept."
    )
    sample_by: Literal["user", "request"] = Field(
        default="user",
        description="Hash the user id (a user is in or out for good) or the request id.",
    )
    max_cases_per_minute: float | None = Field(
        default=None, gt=0, description="Cases admitted per minute; unset: no limit."
    )
    max_usd_per_hour: float | None = Field(
        default=None,
        gt=0,
        description="USD the app's cases may spend per hour on remote models, every "
        "service's calls counted; unset: no limit.",
    )
    max_compute_s_per_hour: float | None = Field(
        default=None,
        gt=0,
        description="Model seconds the app's cases may use per hour (what local models "
        "cost); unset: no limit.",
    )


class TrafficPolicy(BaseModel):
    redaction: RedactionPolicy = Field(default_factory=RedactionPolicy)
    shadow: ShadowPolicy = Field(default_factory=ShadowPolicy)


class TrafficPolicyRow(Base):
    __tablename__ = "traffic_policies"

    app: Mapped[str] = mapped_column(String(200), primary_key=True)
    policy_json: Mapped[dict[str, object]] = mapped_column(JSON)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class PolicyStore:
    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    @classmethod
    def open(cls, dsn: str) -> PolicyStore:
        return cls(open_store(dsn))

    def put(self, app: str, policy: TrafficPolicy) -> None:
        with self._sessions.begin() as session:
            row = session.get(TrafficPolicyRow, app)
            data = policy.model_dump(mode="json")
            now = datetime.now(UTC)
            if row is None:
                session.add(TrafficPolicyRow(app=app, policy_json=data, updated_at=now))
            else:
                row.policy_json = data
                row.updated_at = now

    def get(self, app: str) -> TrafficPolicy:
        with self._sessions() as session:
            row = session.execute(
                select(TrafficPolicyRow).where(TrafficPolicyRow.app == app)
            ).scalar_one_or_none()
        if row is None:
            return TrafficPolicy()
        return TrafficPolicy.model_validate(row.policy_json)


class PolicySource(Protocol):
    def get(self, app: str) -> TrafficPolicy: ...


class FixedPolicies:
    """Policies given in code (tests, a batch job); unknown apps get the default."""

    def __init__(self, policies: Mapping[str, TrafficPolicy] | None = None) -> None:
        self._policies = dict(policies or {})

    def get(self, app: str) -> TrafficPolicy:
        return self._policies.get(app, TrafficPolicy())


class PolicyDirectory:
    """Cached per-app policies and their redactors, re-read after ``ttl_s``.

    ``pseudonym_key`` keys every redactor's pseudonyms (``redaction.pseudonym_key``
    reads the deployment's); None: a key for this process only (tests).
    """

    def __init__(
        self, store: PolicySource, *, ttl_s: float = 30.0, pseudonym_key: bytes | None = None
    ) -> None:
        self._store = store
        self._ttl_s = ttl_s
        self._key = pseudonym_key
        self._cache: dict[str, tuple[float, TrafficPolicy, Redactor]] = {}

    def _entry(self, app: str) -> tuple[float, TrafficPolicy, Redactor]:
        now = time.monotonic()
        hit = self._cache.get(app)
        if hit is None or now - hit[0] > self._ttl_s:
            policy = self._store.get(app)
            hit = (now, policy, Redactor(policy.redaction, pseudonym_key=self._key))
            self._cache[app] = hit
        return hit

    def policy(self, app: str) -> TrafficPolicy:
        return self._entry(app)[1]

    def redactor(self, app: str) -> Redactor:
        return self._entry(app)[2]

    def redact(self, event: pb.Traffic, *, where: str) -> pb.Traffic:
        """The event redacted under its app's policy, the replacements counted by kind."""
        return self.redactor(event.meta.app).traffic(event, where=where)[0]
