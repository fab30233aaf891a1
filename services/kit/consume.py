"""The one way a reag service consumes a topic: decode, guard, handle, emit, commit.

Delivery rules (docs/pipeline.md and docs/architecture.md, "Delivery"):
- at-least-once: an offset is committed only after every output of its event (or
  its dead letter) has been acknowledged by the cluster (acks=all), and only as
  the prefix of the partition's offsets that are done;
- a transient fault (``services.kit.faults``: database, broker, LLM outage, a
  spent budget) never dead-letters: the partition is sought back to the event
  and paused, and resumed after an exponential backoff, while the consumer
  goes on polling its other partitions, so the group keeps it and the max
  poll interval is never exceeded (Spring Kafka's pause-and-seek);
- an event whose app has no corpus yet is parked for
  ``DeliverySettings.park_s`` and retried without holding back the events
  behind it, then dead-lettered as ``app_not_loaded``; a parked event holds
  back its partition's committed offset, so a crash redelivers it;
- nothing is dropped silently: an input that can never be processed (bad
  bytes, missing fields, oversized, unknown schema version, LLM output still
  invalid after repair, a bug) becomes a dead letter on ``reag.dlq.v1`` with
  the original bytes and a reason, and is committed;
- outputs are keyed by the case id, so a redelivered input produces outputs
  that downstream consumers recognise as duplicates.

Handlers are plain typed functions ``async def f(event: In) -> Emit | list[Emit] | None``
that never see Kafka; the topology they may publish to is ``topology.SERVICES``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.errors import IllegalStateError, KafkaError
from faststream import AckPolicy
from faststream.kafka import KafkaMessage, KafkaRouter
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp
from tenacity import AsyncRetrying, RetryCallState, wait_exponential_jitter

from reag import metrics
from reag.llm.accounting import charged_to
from reag.v1 import events_pb2 as pb
from services.kit.codec import decode_event
from services.kit.faults import (
    APP_NOT_LOADED,
    AppNotLoadedError,
    NotLoaded,
    Poison,
    Transient,
    UndeclaredTopicError,
    classify,
)
from services.kit.settings import DeliverySettings
from services.kit.topology import DLQ, ServiceSpec

__all__ = ["CONTENT_TYPE", "Emit", "UndeclaredTopicError", "consume"]

log = logging.getLogger("reag.consume")

M = TypeVar("M", bound=Message)
CONTENT_TYPE = "application/x-protobuf"


@dataclass(frozen=True, slots=True)
class Emit:
    """One output event: where it goes, what it is, how it is keyed."""

    topic: str
    message: Message
    key: str


Handler = Callable[[M], Awaitable["Emit | Sequence[Emit] | None"]]
AppCheck = Callable[[str], bool]
# Turns an input's bytes into what its dead letter may keep (PII redacted) for the first
# hop of raw traffic; every later topic holds redacted events only.
Scrub = Callable[[bytes], bytes]
# Turns an input's bytes into the handler's event where the topic's payload is not a reag
# event (OTLP spans); raises BadEventError for bytes that can never be processed.
Decode = Callable[[bytes | None], M]
Done = Literal["processed", "dead_lettered"]
# One try at an event: done, or the fault that keeps it waiting.
Attempt = Callable[[Any, bool], Awaitable["Done | Transient | NotLoaded"]]


def _outputs(result: Emit | Sequence[Emit] | None) -> list[Emit]:
    if result is None:
        return []
    if isinstance(result, Emit):
        return [result]
    return list(result)


def backoff(settings: DeliverySettings) -> Callable[[int], float]:
    """Seconds to wait before retry ``n`` (1-based): tenacity's exponential wait with jitter."""
    wait = wait_exponential_jitter(
        initial=settings.retry_initial_s,
        max=settings.retry_max_s,
        jitter=settings.retry_initial_s / 2,
    )
    retrying = AsyncRetrying()

    def delay(attempt: int) -> float:
        state = RetryCallState(retrying, fn=None, args=(), kwargs={})
        state.attempt_number = attempt
        return float(wait(state))

    return delay


def _observe_lag(msg: KafkaMessage, service: str) -> None:
    """Messages still behind this one on its partition, from the consumer's last fetch.

    Reading the high watermark the consumer already holds costs no request; it
    is exact when messages flow and stale only while the service is idle
    (when lag is zero anyway) or stuck (which liveness probes catch).
    """
    record: Any = msg.raw_message
    consumer = getattr(msg, "consumer", None)
    highwater = getattr(consumer, "highwater", None)
    if highwater is None:
        return
    try:
        end = highwater(TopicPartition(record.topic, record.partition))
    except (AssertionError, TypeError, ValueError):
        return
    if end is not None:
        metrics.CONSUMER_LAG.labels(service, record.topic, str(record.partition)).set(
            max(0, int(end) - int(record.offset) - 1)
        )


@dataclass(slots=True)
class _Parked:
    record: Any
    since: float
    due: float
    attempts: int = 1


@dataclass(slots=True)
class _Retry:
    offset: int
    attempts: int = 0


class Delivery:
    """One subscriber's delivery state: which offsets are done, parked, or waiting out a fault.

    The consumer is the one FastStream built for the subscriber, bound on its first
    message. FastStream's in-memory ``TestKafkaBroker`` hands a fake consumer that
    cannot pause, seek or commit and never redelivers; there a transient fault is
    waited out in the handler instead (the same backoff), and nothing is committed.
    """

    def __init__(
        self,
        service: str,
        topic: str,
        settings: DeliverySettings,
        attempt: Attempt,
        *,
        commits: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._service, self._topic = service, topic
        self._settings = settings
        self._attempt = attempt
        self._commits = commits
        self._clock = clock
        self._delay = backoff(settings)
        self._lock = asyncio.Lock()
        self._consumer: Any = None
        self._real = False
        self._parked: dict[TopicPartition, dict[int, _Parked]] = {}
        self._position: dict[TopicPartition, int] = {}
        self._committed: dict[TopicPartition, int] = {}
        self._retries: dict[TopicPartition, _Retry] = {}
        self._paused: set[TopicPartition] = set()
        self._timers: dict[TopicPartition, asyncio.TimerHandle] = {}
        self._park_task: asyncio.Task[None] | None = None
        self._arrivals = itertools.count()

    # --- state seen by tests and metrics ---------------------------------------------
    @property
    def parked(self) -> int:
        return sum(len(offsets) for offsets in self._parked.values())

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
        self._forget(set(self._parked) | set(self._position) | set(self._paused))
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
        while True:
            async with self._lock:
                outcome = await self._attempt(record, self._settings.park_s > 0)
            if isinstance(outcome, NotLoaded):
                if self.parked < self._settings.park_max_events:
                    self._park(tp, record)
                    self._advance(tp, record.offset)
                    await self._commit(tp)
                    return
                outcome = Transient("park_full", "ParkFull")
            if isinstance(outcome, Transient):
                delay = self._hold(tp, record, outcome)
                if self._real:
                    return  # the consumer redelivers the event when the partition resumes
                await asyncio.sleep(delay)
                continue
            retry = self._retries.get(tp)
            if retry is not None and retry.offset == record.offset:
                del self._retries[tp]
            self._advance(tp, record.offset)
            await self._commit(tp)
            return

    def _advance(self, tp: TopicPartition, offset: int) -> None:
        self._position[tp] = max(self._position.get(tp, 0), offset + 1)

    async def _commit(self, tp: TopicPartition) -> None:
        """Commit the prefix of ``tp``'s offsets that are done: up to the first parked one."""
        if not (self._real and self._commits):
            return
        parked = self._parked.get(tp)
        target = min(parked) if parked else self._position.get(tp)
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
    def _hold(self, tp: TopicPartition, record: Any, fault: Transient) -> float:
        retry = self._retries.get(tp)
        if retry is None or retry.offset != record.offset:
            retry = self._retries[tp] = _Retry(record.offset)
        retry.attempts += 1
        delay = self._delay(retry.attempts)
        metrics.TRANSIENT_RETRIES.labels(self._service, self._topic, fault.kind).inc()
        log.warning(
            "%s: %s fault (%s) on %s[%d]@%d; retry %d in %.1f s, partition paused",
            self._service,
            fault.kind,
            fault.error,
            record.topic,
            record.partition,
            record.offset,
            retry.attempts,
            delay,
        )
        if self._real and self._owned(tp):
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
    def _park(self, tp: TopicPartition, record: Any) -> None:
        now = self._clock()
        due = min(now + self._delay(1), now + self._settings.park_s)
        # The in-memory test broker gives every record offset 0: key its park by arrival.
        key = record.offset if self._real else next(self._arrivals)
        self._parked.setdefault(tp, {})[key] = _Parked(record, now, due)
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
        while self._parked and not self._closed():
            now = self._clock()
            due = sorted(
                (
                    (tp, offset)
                    for tp, entries in self._parked.items()
                    for offset, e in entries.items()
                    if e.due <= now
                ),
                key=lambda item: (item[0].partition, item[1]),
            )
            if not due:
                soonest = min(e.due for entries in self._parked.values() for e in entries.values())
                await asyncio.sleep(min(max(soonest - now, 0.01), 1.0))
                continue
            for tp, offset in due:
                await self._retry_parked(tp, offset)
        if self._closed():
            self._forget(set(self._parked))

    async def _retry_parked(self, tp: TopicPartition, offset: int) -> None:
        entries = self._parked.get(tp)
        entry = entries.get(offset) if entries else None
        if entry is None:
            return
        if not self._owned(tp):
            self._forget({tp})
            return
        expired = self._clock() - entry.since >= self._settings.park_s
        async with self._lock:
            outcome = await self._attempt(entry.record, not expired)
        if isinstance(outcome, Transient | NotLoaded):
            entry.attempts += 1
            now = self._clock()
            entry.due = now + self._delay(entry.attempts)
            if isinstance(outcome, NotLoaded):
                # The last try falls on the deadline, not a backoff step after it.
                entry.due = min(entry.due, entry.since + self._settings.park_s)
            else:
                metrics.TRANSIENT_RETRIES.labels(self._service, self._topic, outcome.kind).inc()
            return
        del self._parked[tp][offset]
        if not self._parked[tp]:
            del self._parked[tp]
        metrics.PARK_EXITS.labels(self._service, self._topic, outcome).inc()
        self._gauges()
        await self._commit(tp)

    # --- rebalances ----------------------------------------------------------------------
    def _forget(self, partitions: set[TopicPartition]) -> None:
        """Drop what this instance knew of ``partitions``: their new owner reads them again
        from the committed offset, which no parked or failed event was ever behind."""
        for tp in partitions:
            dropped = len(self._parked.pop(tp, {}))
            if dropped:
                metrics.PARK_EXITS.labels(self._service, self._topic, "revoked").inc(dropped)
            self._position.pop(tp, None)
            self._committed.pop(tp, None)
            self._retries.pop(tp, None)
            self._paused.discard(tp)
            timer = self._timers.pop(tp, None)
            if timer is not None:
                timer.cancel()
        self._gauges()

    def revoked(self, partitions: set[TopicPartition]) -> None:
        self._forget({TopicPartition(tp.topic, tp.partition) for tp in partitions})


class _RebalanceListener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, delivery: Delivery) -> None:
        self._delivery = delivery

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self._delivery.revoked(set(revoked))

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        return None


@dataclass(frozen=True, slots=True)
class _Runner:
    """One try at one event: decode, guard, handle, publish, or dead-letter what is poison."""

    spec: ServiceSpec
    event_type: type[Message]
    handler: Handler[Any]
    publishers: dict[str, Any]
    max_event_bytes: int
    app_known: AppCheck | None
    scrub: Scrub | None
    decode: Decode[Any] | None

    async def dead_letter(self, record: Any, poison: Poison) -> None:
        value = record.value or b""
        extra = poison.extra
        if self.scrub is not None:
            value = await asyncio.to_thread(self.scrub, value)
            extra = {k: v for k, v in extra.items() if k != "x-reag-llm-output"}
        letter = pb.DeadLetter(
            service=self.spec.name,
            topic=record.topic,
            partition=record.partition,
            offset=record.offset,
            key=record.key or b"",
            value=value,
            headers={k: v.decode("utf-8", "replace") for k, v in (record.headers or ())},
            reason=poison.reason,
            error_type=poison.error_type,
        )
        letter.failed_at.CopyFrom(Timestamp())
        letter.failed_at.GetCurrentTime()
        await self.publishers[DLQ].publish(
            letter.SerializeToString(),
            key=record.key or None,
            headers={"content-type": CONTENT_TYPE, "x-reag-type": "DeadLetter", **extra},
        )
        metrics.DEAD_LETTERS.labels(self.spec.name, record.topic, poison.error_type).inc()
        log.warning(
            "dead-lettered %s[%d]@%d: %s",
            record.topic,
            record.partition,
            record.offset,
            poison.error_type,
        )

    async def run(self, record: Any) -> None:
        """Decode, guard, handle and publish; raises whatever went wrong."""
        if self.decode is not None:
            event = self.decode(record.value)
        else:
            event = decode_event(record.value, self.event_type, max_bytes=self.max_event_bytes)
        app = getattr(getattr(event, "meta", None), "app", "")
        # The check may read the store (a cache miss): off the event loop.
        if self.app_known is not None and not await asyncio.to_thread(self.app_known, app):
            raise AppNotLoadedError(app)
        with charged_to(app):
            outputs = _outputs(await self.handler(event))
        undeclared = [e.topic for e in outputs if not self.spec.may_publish(e.topic)]
        if undeclared:
            raise UndeclaredTopicError(
                f"{self.spec.name} tried to publish to undeclared topic(s) {undeclared}; "
                "declare them in services/kit/topology.py"
            )
        for emit in outputs:
            await self.publishers[emit.topic].publish(
                emit.message.SerializeToString(),
                key=emit.key.encode(),
                headers={"content-type": CONTENT_TYPE, "x-reag-type": type(emit.message).__name__},
            )
            metrics.EVENTS_PUBLISHED.labels(self.spec.name, emit.topic).inc()

    async def attempt(self, record: Any, may_park: bool) -> Done | Transient | NotLoaded:
        started = time.perf_counter()
        try:
            await self.run(record)
        except Exception as exc:  # every failure is classified: wait, park or dead-letter
            fault = classify(exc)
            if isinstance(fault, Transient):
                return fault
            if isinstance(fault, NotLoaded):
                if may_park:
                    return fault
                fault = Poison(APP_NOT_LOADED, fault.reason)
            if fault.error_type == "processing_error":
                log.exception(
                    "%s failed on %s[%d]@%d",
                    self.spec.name,
                    record.topic,
                    record.partition,
                    record.offset,
                )
            try:
                await self.dead_letter(record, fault)
            except Exception as dlq_exc:  # noqa: BLE001 - the letter waits like any output
                kind = classify(dlq_exc)
                return kind if isinstance(kind, Transient) else Transient("broker", "DLQ")
            return "dead_lettered"
        metrics.STAGE_LATENCY.labels(self.spec.name).observe(time.perf_counter() - started)
        return "processed"


def consume(
    router: KafkaRouter,
    spec: ServiceSpec,
    topic: str,
    event_type: type[M],
    *,
    max_event_bytes: int,
    app_known: AppCheck | None = None,
    scrub: Scrub | None = None,
    decode: Decode[M] | None = None,
    group_id: str | None = None,
    broadcast: bool = False,
    auto_offset_reset: Literal["latest", "earliest", "none"] = "earliest",
    max_poll_interval_ms: int = 1_800_000,
    delivery: DeliverySettings | None = None,
    registry: dict[str, Delivery] | None = None,
) -> Callable[[Handler[M]], Handler[M]]:
    """Register ``handler`` as ``spec``'s consumer of ``topic`` on ``router``.

    By default the service's instances share the topic as one consumer group,
    ``<service>-<topic>``: one group per topic, not per service, because a
    group whose members read different topics rebalances every member on each
    join (measured on Tansu: two topics in one group took 14 s to start, one
    group per topic ~3 s each, concurrently). ``broadcast=True`` makes every
    instance read every partition from the beginning without a group, which is
    how judges load the compacted thresholds topic at start and follow it.

    ``app_known``: an event of an app it denies is parked (``delivery.park_s``), then
    dead-lettered as ``app_not_loaded``; handlers raise ``AppNotLoadedError`` likewise.

    ``scrub``, on a first hop of raw traffic, redacts the bytes a dead letter keeps.

    ``decode`` replaces the protobuf decoding and validation of ``event_type`` for a
    topic whose payload reag does not own (the elicitor's OTLP spans); delivery, dead
    letters and commits stay the same. Such an event has no ``meta``, so ``app_known``
    does not apply and the handler checks apps itself.

    The LLM calls a handler makes are charged to the event's app, for the shadow
    controls' spend budgets (reag.traffic.spend).

    ``max_poll_interval_ms`` is 30 minutes, not aiokafka's 5: one event can
    hold several local-model calls, and a consumer that exceeds the interval
    loses its partitions and the event is delivered again.

    ``registry``, when given, receives the subscriber's ``Delivery`` under the topic's
    name, for tests that watch the park and the paused partitions.
    """
    if topic not in spec.consumes:
        raise UndeclaredTopicError(f"{spec.name} does not declare that it consumes {topic}")
    publishers = {name: router.publisher(name) for name in (*spec.produces, DLQ)}
    settings = delivery or DeliverySettings()

    def decorator(handler: Handler[M]) -> Handler[M]:
        runner = _Runner(
            spec,
            event_type,
            handler,
            publishers,
            max_event_bytes,
            app_known,
            scrub,
            decode,
        )
        flow = Delivery(spec.name, topic, settings, runner.attempt, commits=not broadcast)
        if registry is not None:
            registry[topic] = flow

        async def on_message(msg: KafkaMessage) -> None:
            metrics.EVENTS_CONSUMED.labels(spec.name, topic).inc()
            try:
                await flow.handle(msg.raw_message, msg.consumer)
            finally:
                _observe_lag(msg, spec.name)

        on_message.__name__ = f"{spec.name}_{handler.__name__}"
        extra: dict[str, Any] = {} if broadcast else {"listener": _RebalanceListener(flow)}
        router.subscriber(
            topic,
            group_id=None if broadcast else (group_id or f"{spec.name}-{topic}"),
            auto_offset_reset=auto_offset_reset,
            max_poll_interval_ms=max_poll_interval_ms,
            ack_policy=AckPolicy.MANUAL,
            title=f"{spec.name}:{topic}",
            **extra,
        )(on_message)
        return handler

    return decorator
