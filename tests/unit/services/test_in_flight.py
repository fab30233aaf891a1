"""The in-flight bookkeeping (issue 27): the done prefix of a partition, epochs that keep
a revoked partition's work from committing, and one key's events in turn."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka import TopicPartition

from services.kit.delivery import Delivery
from services.kit.delivery.inflight import InFlight, KeyTurns
from services.kit.faults import Transient
from services.kit.testing import until
from tests.unit.services.test_faults import FAST, Record, RecordingConsumer, never_gives_up

# A wait that never ends here is a bug; fail in seconds rather than at the suite's limit.
pytestmark = pytest.mark.timeout(60)

TP = TopicPartition("t", 0)
# The default is one event at a time; these tests are about several.
WIDE = FAST.model_copy(update={"max_in_flight": 8})


def test_the_commit_target_is_the_contiguous_done_prefix() -> None:
    book = InFlight()
    epoch = book.start(TP, 10)
    for offset in (11, 12, 13):
        assert book.start(TP, offset) == epoch
    assert book.target(TP) is None  # nothing done yet
    assert book.finish(TP, 12, epoch)
    assert book.finish(TP, 13, epoch)
    assert book.target(TP) is None  # 10 and 11 are unfinished: the prefix is empty
    assert book.finish(TP, 10, epoch)
    assert book.target(TP) == 11  # 11 is still in flight
    assert book.finish(TP, 11, epoch)
    assert book.target(TP) == 14
    assert book.target(TP, parked=12) == 12  # a parked event holds the commit back
    assert book.unfinished(TP) == 0


def test_work_of_a_revoked_partition_never_moves_its_commit() -> None:
    book = InFlight()
    old = book.start(TP, 5)
    book.start(TP, 6)
    book.forget(TP)  # revoked
    assert not book.finish(TP, 6, old)
    assert book.target(TP) is None
    new = book.start(TP, 5)  # assigned again: read again from the commit
    assert new != old
    assert not book.finish(TP, 5, old)  # the old copy finishing counts for nothing
    assert book.unfinished(TP) == 1
    assert book.finish(TP, 5, new)
    assert book.target(TP) == 6


async def test_events_with_one_key_run_in_turn_and_other_keys_do_not_wait() -> None:
    turns = KeyTurns()
    log: list[str] = []
    gate = asyncio.Event()

    async def run(key: str | None, name: str, wait: bool = False) -> None:
        async with turns.turn(key):
            log.append(f"{name}+")
            if wait:
                await gate.wait()
            log.append(f"{name}-")

    first = asyncio.create_task(run("k", "a1", wait=True))
    second = asyncio.create_task(run("k", "a2"))
    other = asyncio.create_task(run("j", "b1"))
    keyless = asyncio.create_task(run(None, "n1"))
    await asyncio.wait_for(asyncio.gather(other, keyless), 5)
    assert "a2+" not in log  # a2 waits for a1, which is still running
    gate.set()
    await asyncio.wait_for(asyncio.gather(first, second), 5)
    assert log.index("a1-") < log.index("a2+")
    assert len(turns) == 0  # nothing is kept once a key's events are done


async def test_a_cancelled_waiter_keeps_the_next_one_behind_the_running_event() -> None:
    turns = KeyTurns()
    log: list[str] = []
    gate = asyncio.Event()

    async def run(name: str, wait: bool = False) -> None:
        async with turns.turn("k"):
            log.append(f"{name}+")
            if wait:
                await gate.wait()
            log.append(f"{name}-")

    first = asyncio.create_task(run("a1", wait=True))
    await asyncio.sleep(0)
    middle = asyncio.create_task(run("a2"))
    last = asyncio.create_task(run("a3"))
    await asyncio.sleep(0.01)
    middle.cancel()
    await asyncio.sleep(0.01)
    assert "a3+" not in log  # a1 still runs
    gate.set()
    await asyncio.wait_for(asyncio.gather(first, last), 5)
    assert log == ["a1+", "a1-", "a3+", "a3-"]


async def test_up_to_max_in_flight_events_run_at_once_and_the_loop_waits_beyond() -> None:
    running: set[int] = set()
    peak = {"n": 0}
    release = asyncio.Event()

    async def attempt(record: Any, may_park: bool) -> Any:
        running.add(record.offset)
        peak["n"] = max(peak["n"], len(running))
        await release.wait()
        running.discard(record.offset)
        return "processed"

    settings = FAST.model_copy(update={"max_in_flight": 3})
    consumer = RecordingConsumer({TP})
    flow = Delivery("svc-slots", "t", settings, attempt, never_gives_up)

    class Keyed(Record):
        def __init__(self, offset: int) -> None:
            super().__init__(offset, "demo")
            self.key = f"case-{offset}".encode()  # distinct keys: no turns to wait

    for offset in range(3):
        await flow.handle(Keyed(offset), consumer)
    fourth = asyncio.create_task(flow.handle(Keyed(3), consumer))
    assert await until(lambda: len(running) == 3, 5)
    await asyncio.sleep(0.05)
    assert not fourth.done()  # every slot is taken: the consumer's loop waits
    release.set()
    await asyncio.wait_for(fourth, 5)
    assert await until(lambda: flow.in_flight == 0, 5)
    assert peak["n"] == 3
    commits = [arg for call, arg in consumer.calls if call == "commit"]
    assert commits[-1] == 4
    assert commits == sorted(commits)  # the commit only moves forward


async def test_a_later_event_done_first_is_not_committed_past_an_earlier_one() -> None:
    slow = asyncio.Event()

    async def attempt(record: Any, may_park: bool) -> Any:
        if record.offset == 0:
            await slow.wait()
        return "processed"

    consumer = RecordingConsumer({TP})
    flow = Delivery("svc-prefix", "t", WIDE, attempt, never_gives_up)

    class Keyed(Record):
        def __init__(self, offset: int) -> None:
            super().__init__(offset, "demo")
            self.key = f"case-{offset}".encode()

    for offset in range(4):
        await flow.handle(Keyed(offset), consumer)
    assert await until(lambda: flow.in_flight == 1, 5)  # 1..3 are done, 0 is not
    assert [call for call in consumer.calls if call[0] == "commit"] == []
    slow.set()
    assert await until(lambda: flow.in_flight == 0, 5)
    assert [arg for call, arg in consumer.calls if call == "commit"] == [4]


@pytest.mark.parametrize(("in_key_order", "expected_peak"), [(True, 1), (False, 3)])
async def test_one_keys_events_wait_their_turn_unless_declared_independent(
    in_key_order: bool, expected_peak: int
) -> None:
    running: set[int] = set()
    peak = {"n": 0}
    release = asyncio.Event()

    async def attempt(record: Any, may_park: bool) -> Any:
        running.add(record.offset)
        peak["n"] = max(peak["n"], len(running))
        await release.wait()
        running.discard(record.offset)
        return "processed"

    consumer = RecordingConsumer({TP})
    flow = Delivery("svc-order", "t", WIDE, attempt, never_gives_up, in_key_order=in_key_order)
    for offset in range(3):
        await flow.handle(Record(offset, "demo"), consumer)  # one key: b"k"
    await asyncio.sleep(0.05)
    release.set()
    assert await until(lambda: flow.in_flight == 0, 5)
    assert peak["n"] == expected_peak
    assert [arg for call, arg in consumer.calls if call == "commit"][-1] == 3


@pytest.mark.parametrize("max_in_flight", [1, 2])
async def test_an_event_back_from_a_backoff_never_waits_for_a_slot_its_own_key_holds(
    max_in_flight: int,
) -> None:
    """One key, the first event faults once: while it backs off, the events behind it are
    let in and wait for its turn holding the slots. It must still try again (on main it
    waited for a slot forever, and with one slot, the default, every such fault hung)."""
    tries: dict[int, int] = {}

    async def attempt(record: Any, may_park: bool) -> Any:
        tries[record.offset] = tries.get(record.offset, 0) + 1
        if record.offset == 0 and tries[0] == 1:
            return Transient("database", "OperationalError")
        return "processed"

    settings = FAST.model_copy(update={"max_in_flight": max_in_flight})
    consumer = RecordingConsumer({TP})
    flow = Delivery("svc-backoff", "t", settings, attempt, never_gives_up)
    for offset in range(max_in_flight + 1):
        await asyncio.wait_for(flow.handle(Record(offset, "demo"), consumer), 5)
    assert await until(lambda: flow.in_flight == 0, 5)
    assert tries == {0: 2, **dict.fromkeys(range(1, max_in_flight + 1), 1)}
    assert [arg for call, arg in consumer.calls if call == "commit"][-1] == max_in_flight + 1
