"""Group commit: writes that arrive during a transaction go together in the next, each
caller gets its own outcome, and one bad write fails only itself."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import pytest

from reag.ledger.batching import GroupCommit

pytestmark = pytest.mark.timeout(60)


class BadItemError(Exception):
    """The item's own fault: worth writing the others alone."""


class OutageError(Exception):
    """Everyone's fault: writing alone would only hit the outage again."""


class Writes:
    """A blocking ``write_many`` that records its batches and can be held at its start."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.started = threading.Event()
        self.outage = False

    def __call__(self, items: Sequence[int]) -> list[str]:
        self.started.set()
        self.gate.wait(timeout=30)
        self.batches.append(list(items))
        if self.outage:
            raise OutageError("database down")
        if any(item < 0 for item in items):
            raise BadItemError(f"bad item in {list(items)}")
        return [f"wrote {item}" for item in items]


def retry_alone(exc: BaseException) -> bool:
    return not isinstance(exc, OutageError)


async def test_writes_that_arrive_during_a_transaction_go_together_in_the_next() -> None:
    writes = Writes()
    writes.gate.clear()
    group: GroupCommit[int, str] = GroupCommit(writes, alone=retry_alone)
    first = asyncio.create_task(group.write(0))
    await asyncio.to_thread(writes.started.wait, 10)  # the first transaction is running
    rest = [asyncio.create_task(group.write(n)) for n in range(1, 6)]
    await asyncio.sleep(0.05)
    writes.gate.set()
    assert await first == "wrote 0"
    assert await asyncio.gather(*rest) == [f"wrote {n}" for n in range(1, 6)]
    assert writes.batches == [[0], [1, 2, 3, 4, 5]]


async def test_a_lone_write_is_written_at_once_in_its_own_transaction() -> None:
    writes = Writes()
    group: GroupCommit[int, str] = GroupCommit(writes)
    assert await group.write(7) == "wrote 7"
    assert await group.write(8) == "wrote 8"
    assert writes.batches == [[7], [8]]


async def test_batches_hold_at_most_max_batch_writes() -> None:
    writes = Writes()
    writes.gate.clear()
    group: GroupCommit[int, str] = GroupCommit(writes, max_batch=2)
    tasks = [asyncio.create_task(group.write(n)) for n in range(5)]
    await asyncio.sleep(0.05)
    writes.gate.set()
    assert await asyncio.gather(*tasks) == [f"wrote {n}" for n in range(5)]
    assert writes.batches == [[0, 1], [2, 3], [4]]


async def test_one_bad_write_fails_only_itself() -> None:
    writes = Writes()
    writes.gate.clear()
    group: GroupCommit[int, str] = GroupCommit(writes, alone=retry_alone)
    tasks = [asyncio.create_task(group.write(n)) for n in (1, -2, 3)]
    await asyncio.sleep(0.05)
    writes.gate.set()
    outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    assert outcomes[0] == "wrote 1"
    assert outcomes[2] == "wrote 3"
    assert isinstance(outcomes[1], BadItemError)
    assert writes.batches == [[1, -2, 3], [1], [-2], [3]]


async def test_an_outage_fails_every_waiting_write_once_without_retrying_them_alone() -> None:
    writes = Writes()
    writes.outage = True
    writes.gate.clear()
    group: GroupCommit[int, str] = GroupCommit(writes, alone=retry_alone)
    tasks = [asyncio.create_task(group.write(n)) for n in range(3)]
    await asyncio.sleep(0.05)
    writes.gate.set()
    outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    assert all(isinstance(o, OutageError) for o in outcomes)
    assert writes.batches == [[0, 1, 2]]
    writes.outage = False  # the database is back: the next write goes through
    assert await group.write(4) == "wrote 4"


async def test_a_cancelled_caller_leaves_the_others_their_outcomes() -> None:
    writes = Writes()
    writes.gate.clear()
    group: GroupCommit[int, str] = GroupCommit(writes)
    tasks = [asyncio.create_task(group.write(n)) for n in range(3)]
    await asyncio.sleep(0.05)
    tasks[1].cancel()
    writes.gate.set()
    outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    assert outcomes[0] == "wrote 0"
    assert outcomes[2] == "wrote 2"
    assert isinstance(outcomes[1], asyncio.CancelledError)
    assert writes.batches == [[0, 1, 2]]  # the cancelled write still happened (idempotent)


async def test_a_write_many_that_returns_the_wrong_count_fails_loudly() -> None:
    group: GroupCommit[int, str] = GroupCommit(lambda items: ["one"])
    tasks = [asyncio.create_task(group.write(n)) for n in range(2)]
    outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    # Both were queued before the first transaction began, so they went together.
    assert all(isinstance(o, RuntimeError) and "1 outcomes" in str(o) for o in outcomes)


def test_a_batch_holds_at_least_one_write() -> None:
    with pytest.raises(ValueError, match="at least one"):
        GroupCommit(lambda items: [], max_batch=0)
