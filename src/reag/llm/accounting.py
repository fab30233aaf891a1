"""Who spent what: running totals of every LLM call, per caller and model.

One ``CostLedger`` is shared by all the clients of a process (``default_ledger``),
so a service can read what each of its callers (service, tier) has spent and
the spend budget applies to the process as a whole. Every recorded call is
also exported through the ``reag_llm_*`` metrics declared in ``reag.metrics``.
Honest cost: a result that took several calls (the sampling fallback, a
structured-output repair) is recorded with all of them.

Calls made while handling one app's event are also charged to that app
(``charged_to``), so the shadow controls can hold an app to a spend budget
across every service (reag.traffic.spend).

The spend budget (``REAG_LLM_BUDGET_USD``) is this ledger's total unless a
:class:`SharedBudget` is attached (``share_budget``; the services attach the
store's, reag.traffic.spend.HourlyBudget): then it holds per app and hour for
every replica and survives restarts.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Protocol

from reag.llm.base import Usage
from reag.metrics import LLM_CALL_COST, LLM_CALLS, LLM_COST, LLM_TOKENS


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is paying: costs and metrics are broken down by these labels."""

    service: str = "cli"
    tier: str = ""  # "1", "2", "3" for judges; "" elsewhere


@dataclass(slots=True)
class Totals:
    calls: int = 0
    failed_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    latency_s: float = 0.0


@dataclass(slots=True)
class AppSpend:
    """What one app's events cost since the last drain: USD and model seconds."""

    calls: int = 0
    cost_usd: float = 0.0
    compute_s: float = 0.0


_CHARGED_APP: ContextVar[str] = ContextVar("reag_charged_app", default="")


@contextmanager
def charged_to(app: str) -> Iterator[None]:
    """Charges the LLM calls made inside the block (in this task) to ``app``."""
    token = _CHARGED_APP.set(app)
    try:
        yield
    finally:
        _CHARGED_APP.reset(token)


def charged_app() -> str:
    """The app the calls of this task are charged to; "" outside ``charged_to``."""
    return _CHARGED_APP.get()


class SharedBudget(Protocol):
    """Spend per app in the current hour, kept where every replica sees it.

    Blocking (a store round trip): the client calls it from a worker thread.
    """

    def spent(self, app: str) -> float:
        """USD ``app`` has spent this hour, every process together."""
        ...

    def charge(self, app: str, usd: float) -> float:
        """Adds ``usd`` to ``app``'s hour atomically; returns the hour's new total."""
        ...


class CostLedger:
    """Thread-safe: the local provider and the model server record from worker threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals: dict[tuple[Caller, str], Totals] = {}
        self._by_app: dict[str, AppSpend] = {}
        self.shared_budget: SharedBudget | None = None

    def share_budget(self, budget: SharedBudget | None) -> SharedBudget | None:
        """Holds the spend budget per app and hour in ``budget`` (None: this ledger's total).

        Returns the one attached before, so a caller can put it back.
        """
        previous, self.shared_budget = self.shared_budget, budget
        return previous

    def record(
        self,
        caller: Caller,
        model: str,
        kind: str,
        *,
        usage: Usage,
        cost_usd: float,
        latency_s: float,
        n_calls: int = 1,
    ) -> None:
        with self._lock:
            totals = self._totals.setdefault((caller, model), Totals())
            totals.calls += n_calls
            totals.usage = totals.usage + usage
            totals.cost_usd += cost_usd
            totals.latency_s += latency_s
            app = _CHARGED_APP.get()
            if app:
                spend = self._by_app.setdefault(app, AppSpend())
                spend.calls += n_calls
                spend.cost_usd += cost_usd
                spend.compute_s += latency_s
        labels = (model, caller.service, caller.tier)
        LLM_CALLS.labels(*labels, kind, "ok").inc(n_calls)
        for token_type, count in (
            ("prompt", usage.prompt_tokens),
            ("completion", usage.completion_tokens),
            ("cached", usage.cached_tokens),
        ):
            if count:
                LLM_TOKENS.labels(*labels, token_type).inc(count)
        LLM_COST.labels(*labels).inc(cost_usd)
        for _ in range(n_calls):
            LLM_CALL_COST.labels(*labels).observe(cost_usd / n_calls)

    def record_failure(self, caller: Caller, model: str, kind: str, outcome: str) -> None:
        """``outcome``: "error" (the call failed for good) or "refused_budget"."""
        with self._lock:
            self._totals.setdefault((caller, model), Totals()).failed_calls += 1
        LLM_CALLS.labels(model, caller.service, caller.tier, kind, outcome).inc()

    def drain_by_app(self) -> dict[str, AppSpend]:
        """Per-app spend since the last drain (the flusher writes it to the SQL store)."""
        with self._lock:
            drained, self._by_app = self._by_app, {}
        return drained

    def total_usd(self) -> float:
        with self._lock:
            return sum(t.cost_usd for t in self._totals.values())

    def by_caller(self) -> dict[Caller, Totals]:
        """Totals per caller over all models (copies: later calls do not change them)."""
        merged: dict[Caller, Totals] = {}
        with self._lock:
            for (caller, _model), t in self._totals.items():
                m = merged.setdefault(caller, Totals())
                m.calls += t.calls
                m.failed_calls += t.failed_calls
                m.usage = m.usage + t.usage
                m.cost_usd += t.cost_usd
                m.latency_s += t.latency_s
        return merged

    def by_caller_and_model(self) -> dict[tuple[Caller, str], Totals]:
        with self._lock:
            return {
                key: Totals(t.calls, t.failed_calls, t.usage, t.cost_usd, t.latency_s)
                for key, t in self._totals.items()
            }


_DEFAULT_LEDGER = CostLedger()


def default_ledger() -> CostLedger:
    """The process-wide ledger every client uses unless given its own."""
    return _DEFAULT_LEDGER
