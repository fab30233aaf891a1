"""Which offsets are done, which events wait out a fault with their partition paused, and
which are parked; commits of the done prefix only.

The consumer is the one FastStream built for the subscriber, bound on its first message.
FastStream's in-memory ``TestKafkaBroker`` hands a fake consumer that cannot pause, seek
or commit and never redelivers; there a transient fault is waited out in the handler
instead (the same backoff), and nothing is committed.

What delivery knows of an unfinished event lives in its ``EventState`` (tries, first
fault, park stay), keyed by partition and offset, so that several events of one
partition can be in flight with their own counts.
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
EventKey = tuple[TopicPartition, int]


class Delivery:
    """One subscriber's delivery state: which offsets are done, parked, or waiting out a fault."""

    def __init__(
        self,
        service: str,
        topic: str,
        settings: DeliverySettings,
        attempt: Attempt,
        give_up: GiveUp,
        *,
        commits: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._service, self._topic = service, topic
        self._settings = settings
        self._attempt, self._give_up = attempt, give_up
        self._commits = commits
        self._clock = clock
        self._delay = backoff(settings)
        self._lock = asyncio.Lock()
        self._consumer: Any = None
        self._real = False
        self._park = Park(settings.park_max_events, settings.park_max_bytes)
        self._waiting: dict[EventKey, EventState] = {}  # sought back, due again on resume
        self._position: dict[TopicPartition, int] = {}
        self._committed: dict[TopicPartition, int] = {}
        self._paused: set[TopicPartition] = set()
        self._timers: dict[TopicPartition, asyncio.TimerHandle] = {}
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
        return frozenset(self._paused)

    def _gauges(self) -> None:
        metrics.PARKED_EVENTS.labels(self._service, self._topic).set(self.parked)
        metrics.PAUSED_PARTITIONS.labels(self._service, self._topic).set(len(self._paused))

    def _bind(self, consumer: Any) -> None:
        if consumer is self._consumer:
            return
        # A new consumer (the subscriber restarted) reads from the committed offsets again.
        self._forget(self._park.partitions() | set(self._position) | set(self._paused))
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
        self._bind(consumer)
        tp = TopicPartition(record.topic, record.partition)
        state = self._waiting.pop((tp, record.offset), None)
        if state is None:
            state = EventState.of(record)
        state.record = record
        while True:
            outcome = await self._try(state, self._settings.park_s > 0)
            if isinstance(outcome, NotLoaded):
                if self._park.admits(state.size):
                    self._park_event(tp, state)
                    self._advance(tp, record.offset)
                    await self._commit(tp)
                    return
                outcome = Transient("park_full", "ParkFull")
            if isinstance(outcome, Transient):
                if self._faulted(state, outcome):
                    continue  # the faults had enough: the next try writes the dead letter
                delay = self._hold(tp, state, outcome)
                if self._real:
                    return  # the consumer redelivers the event when the partition resumes
                await asyncio.sleep(delay)
                continue
            self._advance(tp, record.offset)
            await self._commit(tp)
            return

    async def _try(self, state: EventState, may_park: bool) -> Done | Transient | NotLoaded:
        if state.letter_due:
            poison = exhausted_reason(state.last_fault, state.faults, state.waited_s(self._clock()))
            async with self._lock:
                return await self._give_up(state.record, poison)
        async with self._lock:
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

    def _advance(self, tp: TopicPartition, offset: int) -> None:
        self._position[tp] = max(self._position.get(tp, 0), offset + 1)

    async def _commit(self, tp: TopicPartition) -> None:
        """Commit the prefix of ``tp``'s offsets that are done: up to the first parked one."""
        if not (self._real and self._commits):
            return
        parked = self._park.first(tp)
        target = parked if parked is not None else self._position.get(tp)
        if target is None or target <= self._committed.get(tp, -1):
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

    # --- transient faults: seek back, pause, resume after a backoff ------------------
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
            self._waiting[(tp, record.offset)] = state
            self._consumer.seek(tp, record.offset)
            self._consumer.pause(tp)
            self._paused.add(tp)
            previous = self._timers.pop(tp, None)
            if previous is not None:
                previous.cancel()
            self._timers[tp] = asyncio.get_running_loop().call_later(delay, self._resume, tp)
            self._gauges()
        return delay

    def _resume(self, tp: TopicPartition) -> None:
        self._timers.pop(tp, None)
        self._paused.discard(tp)
        self._gauges()
        if self._owned(tp):
            self._consumer.resume(tp)

    # --- apps not loaded yet: the park -------------------------------------------------
    def _park_event(self, tp: TopicPartition, state: EventState) -> None:
        record = state.record
        now = self._clock()
        state.parked_since = now
        state.park_tries = 1
        state.due = min(now + self._delay(1), now + self._settings.park_s)
        # The in-memory test broker gives every record offset 0: key its park by arrival.
        key = record.offset if self._real else next(self._arrivals)
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
            self._position.pop(tp, None)
            self._committed.pop(tp, None)
            for key in [k for k in self._waiting if k[0] == tp]:
                del self._waiting[key]
            self._paused.discard(tp)
            timer = self._timers.pop(tp, None)
            if timer is not None:
                timer.cancel()
        self._gauges()

    def revoked(self, partitions: set[TopicPartition]) -> None:
        self._forget({TopicPartition(tp.topic, tp.partition) for tp in partitions})
