"""Writes what this process spent per app to the SQL store, every few seconds.

The shadow controls hold an app to a spend budget across every service
(reag.traffic.spend); each service's share is the calls its handlers made
while charged to the event's app (the consume path sets it). A store fault
keeps the drained figures for the next round, so no spend is lost to it.

While it runs, the process's LLM budget (``REAG_LLM_BUDGET_USD``) is held per
app and hour in the store (reag.traffic.spend.HourlyBudget), shared by every
replica and kept across restarts; a spent budget stays a transient fault.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from reag.llm.accounting import AppSpend, SharedBudget, default_ledger
from reag.traffic.spend import HourlyBudget, SpendStore

log = logging.getLogger("reag.spend")


class SpendFlusher:
    def __init__(self, service: str, dsn: str, *, every_s: float = 5.0) -> None:
        self._service = service
        self._dsn = dsn
        self._every_s = every_s
        self._store: SpendStore | None = None
        self._pending: dict[str, AppSpend] = {}
        self._task: asyncio.Task[None] | None = None
        self._previous_budget: SharedBudget | None = None

    def _merge(self, spend: dict[str, AppSpend]) -> None:
        for app, s in spend.items():
            p = self._pending.setdefault(app, AppSpend())
            p.calls += s.calls
            p.cost_usd += s.cost_usd
            p.compute_s += s.compute_s

    def flush(self) -> None:
        self._merge(default_ledger().drain_by_app())
        if not self._pending:
            return
        try:
            if self._store is None:
                self._store = SpendStore.open(self._dsn)
            self._store.add(self._service, self._pending)
        except Exception as exc:  # noqa: BLE001  (the store is down: keep the figures, retry)
            log.warning("could not record per-app spend (%s); retrying", type(exc).__name__)
            return
        self._pending = {}

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self._every_s)
            await asyncio.to_thread(self.flush)

    async def start(self) -> None:
        self._previous_budget = default_ledger().share_budget(HourlyBudget(self._dsn))
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await asyncio.to_thread(self.flush)
        default_ledger().share_budget(self._previous_budget)
