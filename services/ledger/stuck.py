"""The ledger's count of stuck cases, refreshed in the background (``reag_cases_stuck``).

The count is one SQL query in a worker thread, so neither the consumers nor the
gRPC API on this event loop wait for it; a store fault skips one round.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from sqlalchemy.exc import SQLAlchemyError

from reag.ledger.store import LedgerStore
from reag.ledger.stuck import StuckGauge, StuckSettings

log = logging.getLogger("reag.ledger")


class StuckWatch:
    def __init__(self, store: LedgerStore, settings: StuckSettings) -> None:
        self._store = store
        self._after_s = settings.ledger_stuck_after_s
        self._every_s = settings.ledger_stuck_every_s
        self._gauge = StuckGauge()
        self._task: asyncio.Task[None] | None = None

    async def count(self) -> dict[str, int]:
        counts = await asyncio.to_thread(self._store.stuck_counts, self._after_s)
        self._gauge.set(counts)
        stuck = sum(counts.values())
        if stuck:
            log.warning(
                "%d case(s) started more than %.0fs ago and never finished "
                "(`reag results --stuck` lists them)",
                stuck,
                self._after_s,
            )
        return counts

    async def _loop(self) -> None:
        while True:
            try:
                await self.count()
            except SQLAlchemyError as exc:
                log.warning("could not count stuck cases (%s); next round", type(exc).__name__)
            await asyncio.sleep(self._every_s)

    async def start(self) -> None:
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
