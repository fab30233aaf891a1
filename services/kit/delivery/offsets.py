"""Which events are in flight, which wait out a fault with their partition paused, and
which are parked; commits of the done prefix only.

Up to ``DeliverySettings.max_in_flight`` events of one subscriber run at once, each in
its own task, events with the same key one after another (``inflight.KeyTurns``). The
consumer's loop hands an event over and goes on polling; it waits only when every slot
is taken. A transient fault pauses the event's partition (no seek: the consumer's
position is already past every event it handed over) and the event is tried again in
its task after the backoff, without holding a slot while it waits, so the other
partitions go on; back from the backoff it takes a free slot, or runs without one
rather than wait for a slot that an event of its own key, waiting for its turn, may
hold. Commits cover the contiguous done prefix of a partition only
(``inflight.InFlight``).

The consumer is the one FastStream built for the subscriber, bound on its first message.
FastStream's in-memory ``TestKafkaBroker`` hands a fake consumer that cannot pause or
commit and never redelivers; there each event runs to its end in the handler (a
transient fault is waited out there, with the same backoff), and nothing is committed.

What delivery knows of an unfinished event lives in its ``EventState`` (tries, first
fault, park stay), so that several events of one partition can be in flight with their
own counts.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import IllegalStateError, KafkaError

from reag import metrics
from services.kit.delivery.inflight import InFlight, KeyTurns
from services.kit.delivery.park import Park
from services.kit.delivery.runner import Done, exhausted_reason
from services.kit.delivery.tries import EventState, backoff
from services.kit.faults import NotLoaded, Poison, Transient
from services.kit.settings import DeliverySettings

log = logging.getLogger("reag.delivery")

# One try at an event: done, or the fault that keeps it waiting.
Attempt = Callable[[Any, bool], Awaitable["Done | Transient | NotLoaded"]]
# The dead letter of an event that transient faults held too long.
GiveUp = Callable[[Any, Poison], Awaitable["Done | Transient"]]


class Delivery:
    """One subscriber's delivery state: which offsets are in flight, done, parked, or
    waiting out a fault."""

    def __init__(
        self,
        service: str,
        topic: str,
        settings: DeliverySettings,
        attempt: Attempt,
        give_up: GiveUp,
        *,
        commits: bool = True,
        in_key_order: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._service, self._topic = service, topic
        self._settings = settings
        self._attempt, self._give_up = attempt, give_up
        self._commits = commits
        self._in_key_order = in_key_order
        self._clock = clock
        self._delay = backoff(settings)
        self._slots = asyncio.Semaphore(settings.max_in_flight)
        self._inflight = InFlight()
        self._turns = KeyTurns()
        self._tasks: set[asyncio.Task[None]] = set()
        self._commit_lock = asyncio.Lock()
        self._consumer: Any = None
        self._real = False
        self._park = Park(settings.park_max_events, settings.park_max_bytes)
        self._committed: dict[TopicPartition, int] = {}
        self._holds: dict[TopicPartition, int] = {}  # events waiting out a fault, by partition
        self._park_task: asyncio.Task[None] | None = None
        self._arrivals = itertools.count()

    # --- state seen by tests and metrics ---------------------------------------------
    @property
    def parked(self) -> int:
        return len(self._park)

    @property
    def parked_bytes(self) -> int:
        return self._park.bytes

    @property
    def paused(self) -> frozenset[TopicPartition]:
        return frozenset(self._holds)

    @property
    def in_flight(self) -> int:
        """Events received and not finished (running, waiting their key's turn, or waiting
        out a fault); parked ones are counted by ``parked``."""
        return len(self._tasks)

    def _gauges(self) -> None:
        metrics.PARKED_EVENTS.labels(self._service, self._topic).set(self.parked)
        metrics.PAUSED_PARTITIONS.labels(self._service, self._topic).set(len(self._holds))

    def _bind(self, consumer: Any) -> None:
        if consumer is self._consumer:
            return
        # A new consumer (the subscriber restarted) reads from the committed offsets again.
        self._forget(
            self._park.partitions()
            | self._inflight.partitions()
            | set(self._holds)
            | set(self._committed)
        )
        self._consumer = consumer
        self._real = isinstance(consumer, AIOKafkaConsumer)

    def _owned(self, tp: TopicPartition) -> bool:
        if not self._real:
            return True
        try:
            return tp in self._consumer.assignment()
        except IllegalStateError:
            return False

    # --- the main path ---------------------------------------------------------------
    async def handle(self, record: Any, consumer: Any) -> None:
        """Take one event from the consumer's loop: start it and return once a slot is
        free (the loop goes on polling), or, under the in-memory broker, run it to its end."""
        self._bind(consumer)
        tp = TopicPartition(record.topic, record.partition)
        state = EventState.of(record)
        await self._slots.acquire()
        if not self._real:
            await self._run(tp, next(self._arrivals), 0, state)
            return
        epoch = self._inflight.start(tp, record.offset)
        task = asyncio.get_running_loop().create_task(
            self._run(tp, record.offset, epoch, state),
            name=f"event:{self._service}:{tp.topic}[{tp.partition}]@{record.offset}",
        )
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def abandon(self) -> None:
        """Drop the events in flight, as a killed process would: nothing of them is
        published or committed, and the group's next owner reads them again."""
        for task in list(self._tasks):
            task.cancel()
        self._forget(self._inflight.partitions())

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            # A fault of delivery itself (handlers' faults are classified by the runner):
            # the offset stays unfinished, so the commit never passes it.
            log.error(
                "%s: delivery task %s failed",
                self._service,
                task.get_name(),
                exc_info=task.exception(),
            )

    async def _run(self, tp: TopicPartition, offset: int, epoch: int, state: EventState) -> None:
        """Try one event until it is done, parked or dead-lettered; holds a slot, given back
        while it waits out a transient fault."""
        holding = True
        try:
            ordered = self._in_key_order and state.record.key is not None
            key = (tp, state.record.key) if ordered else None
            async with self._turns.turn(key):
                while True:
                    if self._real and not self._inflight.current(tp, epoch):
                        return  # revoked: its new owner reads it again from the commit
                    outcome = await self._try(state, self._settings.park_s > 0)
                    if isinstance(outcome, NotLoaded):
                        if self._park.admits(state.size):
                            self._park_event(tp, offset, state)
                            await self._done(tp, offset, epoch)
                            return
                        outcome = Transient("park_full", "ParkFull")
                    if isinstance(outcome, Transient):
                        if self._faulted(state, outcome):
                            continue  # the faults had enough: the next try writes the letter
                        delay = self._hold(tp, state, outcome)
                        self._slots.release()
                        holding = False
                        try:
                            await asyncio.sleep(delay)
                        finally:
                            self._unhold(tp, epoch)
                        # Back for another try. A slot may be held by an event of this
                        # key waiting for its turn behind this one: waiting for that slot
                        # would never end. So take a free slot if there is one, else run
                        # without one (the cap is exceeded by at most the events back from
                        # a backoff, each of which held a slot when it was let in).
                        if not self._slots.locked():
                            await self._slots.acquire()
                            holding = True
                        continue
                    await self._done(tp, offset, epoch)
                    return
        finally:
            if holding:
                self._slots.release()

    async def _done(self, tp: TopicPartition, offset: int, epoch: int) -> None:
        if self._real and self._inflight.finish(tp, offset, epoch):
            await self._commit(tp)

    async def _try(self, state: EventState, may_park: bool) -> Done | Transient | NotLoaded:
        if state.letter_due:
            poison = exhausted_reason(state.last_fault, state.faults, state.waited_s(self._clock()))
            return await self._give_up(state.record, poison)
        return await self._attempt(state.record, may_park)

    def _faulted(self, state: EventState, fault: Transient) -> bool:
        """Count a transient fault against the event; True when it has now had enough and
        its dead letter is to be written at once (a letter that itself meets a transient
        fault waits like any output)."""
        metrics.TRANSIENT_RETRIES.labels(self._service, self._topic, fault.kind).inc()
        state.fault(fault, self._clock())
        if state.letter_due or not state.exhausted(self._settings, self._clock()):
            return False
        state.letter_due = True
        return True

    async def _commit(self, tp: TopicPartition) -> None:
        """Commit the done prefix of ``tp``: up to its first unfinished or parked offset.
        One commit at a time; one that waited covers what finished meanwhile."""
        if not (self._real and self._commits):
            return
        async with self._commit_lock:
            target = self._inflight.target(tp, self._park.first(tp))
            if target is None or target <= self._committed.get(tp, -1) or not self._owned(tp):
                return
            try:
                await self._consumer.commit({tp: target})
            except (KafkaError, IllegalStateError) as exc:
                # Not fatal: the next commit covers this offset, and a redelivery is a duplicate.
                log.warning(
                    "%s: commit of %s[%d]@%d failed (%s)",
                    self._service,
                    tp.topic,
                    tp.partition,
                    target,
                    type(exc).__name__,
                )
                return
            self._committed[tp] = target

    # --- transient faults: pause the partition, try again after a backoff -------------
    def _hold(self, tp: TopicPartition, state: EventState, fault: Transient) -> float:
        record = state.record
        delay = self._delay(state.faults)
        log.warning(
            "%s: %s fault (%s) on %s[%d]@%d; retry %d in %.1f s, partition paused",
            self._service,
            fault.kind,
            fault.error,
            record.topic,
            record.partition,
            record.offset,
            state.faults,
            delay,
        )
        if self._real and self._owned(tp):
            # No seek: the consumer's position is past every event it handed over, and
            # records it fetched for a paused partition are fetched again on resume.
            if not self._holds.get(tp):
                self._consumer.pause(tp)
            self._holds[tp] = self._holds.get(tp, 0) + 1
            self._gauges()
        return delay

    def _unhold(self, tp: TopicPartition, epoch: int) -> None:
        if tp not in self._holds or not self._inflight.current(tp, epoch):
            return
        self._holds[tp] -= 1
        if self._holds[tp] <= 0:
            del self._holds[tp]
            if self._owned(tp):
                self._consumer.resume(tp)
        self._gauges()

    # --- apps not loaded yet: the park -------------------------------------------------
    def _park_event(self, tp: TopicPartition, key: int, state: EventState) -> None:
        """Park an event under ``key``: its offset (its arrival under the in-memory broker,
        which gives every record offset 0)."""
        record = state.record
        now = self._clock()
        state.parked_since = now
        state.park_tries = 1
        state.due = min(now + self._delay(1), now + self._settings.park_s)
        self._park.add(tp, key, state)
        self._gauges()
        log.info(
            "%s: parked %s[%d]@%d until its app is loaded",
            self._service,
            record.topic,
            record.partition,
            record.offset,
        )
        if self._park_task is None or self._park_task.done():
            self._park_task = asyncio.get_running_loop().create_task(
                self._drain_park(), name=f"park:{self._service}:{self._topic}"
            )

    def _closed(self) -> bool:
        return self._real and bool(getattr(self._consumer, "_closed", False))

    async def _drain_park(self) -> None:
        """Retry parked events as they fall due, until the park is empty or the consumer stops."""
        while len(self._park) and not self._closed():
            now = self._clock()
            due = self._park.due(now)
            if not due:
                await asyncio.sleep(min(max(self._park.soonest() - now, 0.01), 1.0))
                continue
            for tp, key in due:
                await self._retry_parked(tp, key)
        if self._closed():
            self._forget(self._park.partitions())

    async def _retry_parked(self, tp: TopicPartition, key: int) -> None:
        state = self._park.get(tp, key)
        if state is None:
            return
        if not self._owned(tp):
            self._forget({tp})
            return
        assert state.parked_since is not None
        expired = self._clock() - state.parked_since >= self._settings.park_s
        outcome = await self._try(state, not expired)
        if isinstance(outcome, Transient | NotLoaded):
            now = self._clock()
            if isinstance(outcome, Transient) and self._faulted(state, outcome):
                state.due = now  # the dead letter is written on the next round
                return
            state.park_tries += 1
            state.due = now + self._delay(state.park_tries)
            if isinstance(outcome, NotLoaded):
                # The last try falls on the deadline, not a backoff step after it.
                state.due = min(state.due, state.parked_since + self._settings.park_s)
            return
        self._park.remove(tp, key)
        metrics.PARK_EXITS.labels(self._service, self._topic, outcome).inc()
        self._gauges()
        await self._commit(tp)

    # --- rebalances ----------------------------------------------------------------------
    def _forget(self, partitions: set[TopicPartition]) -> None:
        """Drop what this instance knew of ``partitions``: their new owner reads them again
        from the committed offset, which no parked or failed event was ever behind."""
        for tp in partitions:
            dropped = self._park.drop(tp)
            if dropped:
                metrics.PARK_EXITS.labels(self._service, self._topic, "revoked").inc(dropped)
            # Its events still in flight finish without a commit (their epoch is gone).
            self._inflight.forget(tp)
            self._committed.pop(tp, None)
            self._holds.pop(tp, None)
        self._gauges()

    def revoked(self, partitions: set[TopicPartition]) -> None:
        self._forget({TopicPartition(tp.topic, tp.partition) for tp in partitions})
