"""Group commit: the ledger's writes that arrive while one transaction runs go together in
the next.

With events in flight (``REAG_DELIVERY__MAX_IN_FLIGHT``), a ledger replica has up to that
many events per topic waiting on the database at once; one transaction each made the
database round trips, not the handlers, the ledger's pace (docs/chaos.md, the load run).
``GroupCommit`` keeps one transaction running at a time: every write that arrives while it
runs joins the next, up to ``max_batch``, so a lone event is written at once (no window
to wait out) and a busy ledger writes in batches as large as its backlog.

Each caller still gets its own event's outcome. A batch that fails is rolled back whole;
when the failure may be the event's own (``alone`` says so, for example a bug or a bad
event rather than a database outage), its events are written again one by one, so one bad
event fails only itself. An outage fails every waiting caller at once, and the delivery
path retries each.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from reag import metrics

Item = TypeVar("Item")
Outcome = TypeVar("Outcome")

DEFAULT_MAX_BATCH = 256


def _always(_exc: BaseException) -> bool:
    return True


@dataclass(slots=True)
class _Waiting(Generic[Item, Outcome]):
    item: Item
    future: asyncio.Future[Outcome] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class GroupCommit(Generic[Item, Outcome]):
    """Batches ``write_many`` calls (a blocking function, run in a worker thread).

    ``write_many(items)`` returns one outcome per item, in order, or raises for all.
    ``alone(exc)``: whether a failed batch's items are worth writing one by one.
    """

    def __init__(
        self,
        write_many: Callable[[Sequence[Item]], Sequence[Outcome]],
        *,
        max_batch: int = DEFAULT_MAX_BATCH,
        alone: Callable[[BaseException], bool] = _always,
        name: str = "ledger",
    ) -> None:
        if max_batch < 1:
            raise ValueError("a batch holds at least one write")
        self._write_many = write_many
        self._max_batch = max_batch
        self._alone = alone
        self._name = name
        self._queue: list[_Waiting[Item, Outcome]] = []
        self._writer: asyncio.Task[None] | None = None

    async def write(self, item: Item) -> Outcome:
        """``item``'s outcome once its batch committed; raises what its write raised."""
        waiting: _Waiting[Item, Outcome] = _Waiting(item)
        self._queue.append(waiting)
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._drain(), name=f"{self._name}-group-commit")
        # A caller cancelled meanwhile (a revoked partition) leaves its write to go on:
        # the write is idempotent, and its event comes again to whoever owns it next.
        return await waiting.future

    async def _drain(self) -> None:
        while self._queue:
            batch = self._queue[: self._max_batch]
            del self._queue[: len(batch)]
            metrics.LEDGER_BATCH_EVENTS.labels(self._name).observe(len(batch))
            await self._commit(batch)

    async def _commit(self, batch: list[_Waiting[Item, Outcome]]) -> None:
        try:
            outcomes = await asyncio.to_thread(self._write_many, [w.item for w in batch])
        except Exception as exc:  # noqa: BLE001 - every failure goes to its callers
            if len(batch) == 1 or not self._alone(exc):
                for waiting in batch:
                    _settle(waiting, exc=exc)
                return
            for waiting in batch:  # find the one that failed; the others commit alone
                await self._commit([waiting])
            return
        if len(outcomes) != len(batch):  # a broken write_many: fail loudly, never silently
            error = RuntimeError(f"{len(outcomes)} outcomes for a batch of {len(batch)} writes")
            for waiting in batch:
                _settle(waiting, exc=error)
            return
        for waiting, outcome in zip(batch, outcomes, strict=True):
            _settle(waiting, outcome=outcome)


def _settle(
    waiting: _Waiting[Item, Outcome],
    *,
    outcome: Outcome | None = None,
    exc: BaseException | None = None,
) -> None:
    if waiting.future.done():  # its caller was cancelled
        return
    if exc is not None:
        waiting.future.set_exception(exc)
    else:
        waiting.future.set_result(outcome)  # type: ignore[arg-type]
