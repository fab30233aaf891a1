"""``Recorder``: an app's live traffic to ``reag.traffic.v1``, off its request path.

What the app's request thread pays is a sampling check and a put into a
bounded queue; everything else (building the event, redacting it, producing
it with acks=all) happens on a background thread with its own event loop, so
a sync app (Flask, Django, a worker) records as easily as an async one, and a
slow or absent Kafka never slows a request. ``python -m bench recorder``
measures what ``record()`` costs the calling thread.

Nothing raises into the app: a full queue drops the event, a broken event or
a failed send is counted; each is counted by outcome in
``reag_recorder_events_total`` and logged at most once per ``log_every_s``
per kind. PII is redacted here, on the app's side, before anything leaves the
process (``reag.traffic.redaction``); an event over ``max_event_bytes`` is
refused before any redaction pattern runs on it, so a hostile request cannot
hold the app's interpreter. A request without an id gets one derived from its
query, response, user and time (``reag.ids.request_id_for``), so sampling by
request is fixed when ``record()`` is called and a replayed log lands on the
same cases.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import logging
import queue
import random
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any, Literal, Protocol

from reag import metrics
from reag.ids import request_id_for
from reag.settings import ReagSettings
from reag.traffic.live import (
    TRACE_HEADERS,
    TRAFFIC_HEADERS,
    InvalidExchangeError,
    LiveExchange,
    kafka_key,
    to_traffic,
)
from reag.traffic.redaction import (
    DEFAULT_MAX_EVENT_BYTES,
    RedactionPolicy,
    Redactor,
    TooLargeError,
    check_size,
    configured_key,
)
from reag.traffic.sampling import kept, sample_key

try:  # The OpenTelemetry API is optional: without it no trace context travels.
    from opentelemetry.propagate import inject as _otel_inject
except ImportError:  # pragma: no cover - the client extra does not install it
    _otel_inject = None  # type: ignore[assignment]

log = logging.getLogger("reag.client")

Outcome = Literal["recorded", "sampled_out", "dropped_queue_full", "failed"]
Headers = Sequence[tuple[str, bytes]]


class ProducerLike(Protocol):
    """The part of ``aiokafka.AIOKafkaProducer`` the recorder uses (tests pass a fake)."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def send(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        *,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> Awaitable[Any]: ...


# Called on the recorder's own thread, inside its running event loop (aiokafka binds a
# producer to the loop it was made in).
ProducerFactory = Callable[[], ProducerLike]


@dataclass(frozen=True, slots=True)
class RecorderStats:
    """What this recorder did with the events it was given, since it was made."""

    recorded: int  # acknowledged by the brokers (acks=all)
    sampled_out: int
    dropped_queue_full: int
    failed: int  # invalid, failed to send, or still unsent when the recorder closed
    pending: int  # queued or in flight


@dataclass(frozen=True, slots=True)
class _Pending:
    app: str
    exchange: LiveExchange
    headers: Headers


class _Throttled:
    """One log line per kind per ``interval_s``, saying how many it stood for."""

    def __init__(self, interval_s: float) -> None:
        self._interval_s = interval_s
        self._last: dict[str, float] = {}
        self._suppressed: Counter[str] = Counter()
        self._lock = threading.Lock()

    def warning(self, kind: str, message: str, *args: object) -> None:
        now = time.monotonic()
        with self._lock:
            last = self._last.get(kind)
            if last is not None and now - last < self._interval_s:
                self._suppressed[kind] += 1
                return
            self._last[kind] = now
            more = self._suppressed.pop(kind, 0)
        if more:
            log.warning(message + " (%d more since the last such message)", *args, more)
        else:
            log.warning(message, *args)


def _trace_headers() -> Headers:
    """The caller's W3C trace context, read on the caller's thread (contextvars do not
    cross to the recorder's), so the case joins the app's trace."""
    if _otel_inject is None:
        return ()
    carrier: dict[str, str] = {}
    _otel_inject(carrier)
    return tuple((name, carrier[name].encode()) for name in TRACE_HEADERS if name in carrier)


def _let_app_threads_run() -> None:
    """Releases the GIL for a moment between two events. Redacting an event holds it for
    a few hundred microseconds; without a blocking call CPython hands it over only after
    the 5 ms switch interval, so an app thread waiting to serve or record would wait out
    the recorder's whole batch (the paced p99 of ``python -m bench recorder``)."""
    time.sleep(0)


class Recorder:
    """Records an app's request/response pairs as redacted ``reag.v1.Traffic`` events.

    One recorder per process is the intent: it owns a thread, an event loop and
    a Kafka producer. ``close()`` (also run at exit, and by ``with``) sends what
    is queued within ``close_timeout_s``.
    """

    def __init__(
        self,
        *,
        bootstrap_servers: str | Sequence[str] = "127.0.0.1:9092",
        app: str,
        topic: str = "reag.traffic.v1",
        sample_rate: float = 1.0,
        sample_by: Literal["user", "request"] = "user",
        queue_size: int = 10_000,
        redaction: RedactionPolicy | None = None,
        target: str = "",
        client_id: str = "reag-recorder",
        producer_options: Mapping[str, Any] | None = None,
        producer_factory: ProducerFactory | None = None,
        close_timeout_s: float = 5.0,
        log_every_s: float = 10.0,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        pseudonym_key: str | bytes | None = None,
    ) -> None:
        """``redaction`` None is the default policy (every built-in recogniser), not none:
        turning redaction off takes ``RedactionPolicy(enabled=False)``.
        ``producer_options`` go to ``AIOKafkaProducer`` (security, ``linger_ms``, ...).
        ``max_event_bytes`` is reag's event limit (``REAG_KAFKA__MAX_EVENT_BYTES``): a
        larger exchange is counted as failed, never scanned. ``pseudonym_key`` keys the
        pseudonyms of user ids that carry PII and must be the services' key
        (``REAG_PSEUDONYM_KEY``); None reads that variable, else the key in
        ``<REAG_STATE_DIR>/pseudonym.key`` (the embedded stack's), else draws one for
        this process and warns."""
        if not app:
            raise ValueError("Recorder needs the app's name (app=...), as registered in reag")
        if not 0.0 <= sample_rate <= 1.0:
            raise ValueError(f"sample_rate must be within [0, 1], not {sample_rate}")
        if queue_size < 1:
            raise ValueError(f"queue_size must be at least 1, not {queue_size}")
        self.app = app
        self.topic = topic
        self._sample_rate = sample_rate
        self._sample_by = sample_by
        self._target = target
        if pseudonym_key is None:
            key = _default_key()
        else:
            key = pseudonym_key.encode() if isinstance(pseudonym_key, str) else pseudonym_key
        self._redactor = Redactor(redaction, pseudonym_key=key)
        self._max_event_bytes = max_event_bytes
        self._close_timeout_s = close_timeout_s
        self._throttle = _Throttled(log_every_s)
        self._bootstrap = (
            bootstrap_servers if isinstance(bootstrap_servers, str) else ",".join(bootstrap_servers)
        )
        if producer_factory is None:
            producer_factory = self._aiokafka_factory(client_id, dict(producer_options or {}))

        self._factory = producer_factory
        self._queue: queue.Queue[_Pending] = queue.Queue(maxsize=queue_size)
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._metric_children: dict[tuple[str, str], Any] = {}
        self._closed = False
        self._closing = threading.Event()
        self._close_deadline = float("inf")
        self._wake_pending = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wakeup: asyncio.Event | None = None
        self._in_flight: set[asyncio.Future[Any]] = set()
        metrics.RECORDER_QUEUE_DEPTH.labels(app).set_function(self._queue.qsize)
        self._thread = threading.Thread(target=self._run, name="reag-recorder", daemon=True)
        self._thread.start()
        atexit.register(self._at_exit)

    def _aiokafka_factory(self, client_id: str, options: dict[str, Any]) -> ProducerFactory:
        try:
            from aiokafka import AIOKafkaProducer
        except ImportError as exc:
            raise ImportError(
                "reag.client's Recorder produces with aiokafka: pip install 'reag[client]'"
            ) from exc
        settings: dict[str, Any] = {
            "client_id": client_id,
            # acks=all: an event counts as recorded only once the in-sync replicas have it.
            "acks": "all",
            # Tansu (the embedded broker) has no InitProducerId; duplicates are deduped
            # downstream by case id anyway.
            "enable_idempotence": False,
            # A few ms of batching: at high request rates events share a request.
            "linger_ms": 5,
            **options,
        }
        bootstrap = self._bootstrap

        def make() -> ProducerLike:
            producer: ProducerLike = AIOKafkaProducer(bootstrap_servers=bootstrap, **settings)
            return producer

        return make

    # --- the app's side: never blocks, never raises -------------------------------------

    def record(
        self,
        *,
        query: str,
        response: str,
        profile: Mapping[str, object] | None = None,
        app: str | None = None,
        user_id: str | None = None,
        request_id: str | None = None,
        latency_s: float | None = None,
        persona_hint: str = "",
        description: str = "",
        target: str | None = None,
    ) -> bool:
        """Queue one request/response; True if it was queued (not yet delivered).

        Callable from any thread, with or without a running event loop. ``profile``
        is the user's attributes (values become strings; structures become JSON).
        """
        name = self.app
        try:
            name = app or self.app
            exchange = LiveExchange(
                query=query,
                response=response,
                user_id="" if user_id is None else str(user_id),
                request_id="" if request_id is None else str(request_id),
                latency_s=0.0 if latency_s is None else latency_s,
                attributes=dict(profile) if profile else {},
                persona_hint=persona_hint,
                description=description,
                target=self._target if target is None else target,
                created_at=time.time(),
            )
            return self._submit(name, exchange)
        except Exception:  # noqa: BLE001 - the app's request must not fail because of reag
            self._failed(name, "record", "reag recorder: record() failed", exc_info=True)
            return False

    async def arecord(
        self,
        *,
        query: str,
        response: str,
        profile: Mapping[str, object] | None = None,
        app: str | None = None,
        user_id: str | None = None,
        request_id: str | None = None,
        latency_s: float | None = None,
        persona_hint: str = "",
        description: str = "",
        target: str | None = None,
    ) -> bool:
        """``record`` for async code; it does not await anything either."""
        return self.record(
            query=query,
            response=response,
            profile=profile,
            app=app,
            user_id=user_id,
            request_id=request_id,
            latency_s=latency_s,
            persona_hint=persona_hint,
            description=description,
            target=target,
        )

    def record_exchange(self, exchange: LiveExchange, *, app: str | None = None) -> bool:
        """Queue an exchange built elsewhere (``reag traffic send`` replays a log with it)."""
        name = app or self.app
        try:
            return self._submit(name, exchange)
        except Exception:  # noqa: BLE001 - as in record()
            self._failed(name, "record", "reag recorder: record() failed", exc_info=True)
            return False

    def _submit(self, app: str, exchange: LiveExchange) -> bool:
        if self._closed:
            self._failed(app, "closed", "reag recorder: record() after close(); event not sent")
            return False
        if _text_length(exchange) > self._max_event_bytes:
            # Before sampling, which scans the ids with the redactor's patterns.
            self._too_large(app)
            return False
        if not exchange.request_id:
            exchange = _with_derived_id(exchange)
        if self._sample_rate < 1.0 and not self._sampled_in(app, exchange):
            self._count(app, "sampled_out")
            return False
        try:
            self._queue.put_nowait(_Pending(app, exchange, _trace_headers()))
        except queue.Full:
            self._count(app, "dropped_queue_full")
            self._throttle.warning(
                "queue_full",
                "reag recorder: queue full (%d events), event dropped; is Kafka at %s reachable?",
                self._queue.maxsize,
                self._bootstrap,
            )
            return False
        self._wake()
        return True

    def _sampled_in(self, app: str, exchange: LiveExchange) -> bool:
        """The elicitor's shadow gate samples the same key on the redacted ids, so a user
        kept here at rate r is kept there at any rate above r."""
        key = sample_key(
            app,
            self._redactor.user_id(exchange.user_id),
            self._redactor.text(exchange.request_id),
            by=self._sample_by,
        )
        if key is None:  # pragma: no cover - _submit derives a request id first
            return random.random() < self._sample_rate
        return kept(key, self._sample_rate)

    def _too_large(self, app: str) -> None:
        self._failed(
            app,
            "too_large",
            "reag recorder: an event over the %d-byte limit was not sent",
            self._max_event_bytes,
        )

    def _wake(self, *, force: bool = False) -> None:
        """Wakes the background loop; one wake-up in flight is enough (the loop clears the
        flag before it drains), which keeps the self-pipe write off most calls."""
        if self._wake_pending and not force:
            return
        self._wake_pending = True
        loop, event = self._loop, self._wakeup
        if loop is None or event is None:
            return  # not started yet: the loop drains the queue once it is
        with contextlib.suppress(RuntimeError):  # the loop has just closed
            loop.call_soon_threadsafe(event.set)

    def _count(self, app: str, outcome: Outcome) -> None:
        with self._lock:
            self._counts[outcome] += 1
        child = self._metric_children.get((app, outcome))
        if child is None:
            child = metrics.RECORDER_EVENTS.labels(app, outcome)
            self._metric_children[(app, outcome)] = child
        child.inc()

    def _failed(
        self, app: str, kind: str, message: str, *args: object, exc_info: bool = False
    ) -> None:
        with contextlib.suppress(Exception):
            self._count(app, "failed")
            if exc_info:
                log.debug(message, *args, exc_info=True)
            self._throttle.warning(kind, message, *args)

    # --- flushing and closing -------------------------------------------------------------

    def stats(self) -> RecorderStats:
        with self._lock:
            counts = dict(self._counts)
        return RecorderStats(
            recorded=counts.get("recorded", 0),
            sampled_out=counts.get("sampled_out", 0),
            dropped_queue_full=counts.get("dropped_queue_full", 0),
            failed=counts.get("failed", 0),
            pending=self._queue.unfinished_tasks,
        )

    def flush(self, timeout: float = 5.0) -> bool:
        """Block until every queued event is acknowledged or failed; False on timeout.

        From async code use ``aflush`` so the app's event loop is not blocked.
        """
        deadline = time.monotonic() + timeout
        done = self._queue.all_tasks_done
        with done:
            while self._queue.unfinished_tasks:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                done.wait(remaining)
        return True

    async def aflush(self, timeout: float = 5.0) -> bool:  # noqa: ASYNC109 - flush's own
        return await asyncio.to_thread(self.flush, timeout)

    def close(self, timeout: float | None = None) -> None:
        """Send what is queued within ``timeout`` (default ``close_timeout_s``), then stop.

        Events still unsent at the deadline are counted as failed. Idempotent.
        """
        timeout = self._close_timeout_s if timeout is None else timeout
        if not self._closed:
            self._closed = True
            self._close_deadline = time.monotonic() + timeout
            self._closing.set()
            self._wake(force=True)
            with contextlib.suppress(Exception):
                atexit.unregister(self._at_exit)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout + 1.0)

    async def aclose(self, timeout: float | None = None) -> None:  # noqa: ASYNC109
        await asyncio.to_thread(self.close, timeout)

    def _at_exit(self) -> None:
        self.close()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Recorder:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # --- the recorder's thread ------------------------------------------------------------

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self._main())
        except Exception:
            log.exception("reag recorder: the background producer stopped")
        finally:
            self._loop = None
            self._fail_queued("the recorder stopped before it could send them")
            loop.close()
            # The registry would otherwise hold this recorder's queue for good.
            metrics.RECORDER_QUEUE_DEPTH.labels(self.app).set_function(lambda: 0.0)

    def _remaining(self) -> float:
        return max(0.0, self._close_deadline - time.monotonic())

    async def _main(self) -> None:
        self._wakeup = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        producer = await self._connect()
        if producer is None:
            return
        try:
            while True:
                self._wakeup.clear()
                self._wake_pending = False
                await self._drain(producer)
                if self._closing.is_set():
                    break
                with contextlib.suppress(TimeoutError):
                    # A safety net only: every put wakes the loop.
                    await asyncio.wait_for(self._wakeup.wait(), 1.0)
            if self._in_flight:
                await asyncio.wait(set(self._in_flight), timeout=self._remaining())
            for future in list(self._in_flight):
                future.cancel()  # counted as failed by its callback
            await asyncio.sleep(0)  # let those callbacks run
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(producer.stop(), min(max(self._remaining(), 0.1), 30.0))

    async def _connect(self) -> ProducerLike | None:
        """A started producer, retried with backoff while events wait (and drop when the
        queue fills); None when the recorder closes before Kafka is reachable."""
        delay = 0.25
        while True:
            producer: ProducerLike | None = None
            try:
                producer = self._factory()
                await producer.start()
            except Exception as exc:  # noqa: BLE001 - any failure to start is retried
                self._throttle.warning(
                    "connect",
                    "reag recorder: cannot reach Kafka at %s (%s); events wait in the queue",
                    self._bootstrap,
                    type(exc).__name__,
                )
                if producer is not None:
                    with contextlib.suppress(Exception):
                        await producer.stop()
            else:
                return producer
            wait = delay
            if self._closing.is_set():
                if self._remaining() <= 0:
                    return None
                wait = min(delay, self._remaining())
            assert self._wakeup is not None
            self._wakeup.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), wait)  # close() wakes it early
            delay = min(delay * 2, 5.0)

    async def _drain(self, producer: ProducerLike) -> None:
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            await self._send(producer, item)
            _let_app_threads_run()

    async def _send(self, producer: ProducerLike, item: _Pending) -> None:
        try:
            built = to_traffic(item.exchange, item.app)
            check_size(built.ByteSize(), self._max_event_bytes)  # before any pattern runs
            event, _ = self._redactor.traffic(built, where="recorder")
            sent = await producer.send(
                self.topic,
                event.SerializeToString(),
                key=kafka_key(event),
                headers=[*TRAFFIC_HEADERS, *item.headers],
            )
            future = asyncio.ensure_future(sent)
        except TooLargeError:
            self._too_large(item.app)
            self._queue.task_done()
            return
        except InvalidExchangeError as exc:  # the reason names fields, never their values
            self._failed(item.app, "invalid", "reag recorder: event not sent: %s", exc)
            self._queue.task_done()
            return
        except Exception as exc:  # noqa: BLE001 - counted and logged, never raised
            self._failed(item.app, "send", "reag recorder: send failed (%s)", type(exc).__name__)
            self._queue.task_done()
            return
        self._in_flight.add(future)
        future.add_done_callback(functools.partial(self._delivered, item.app))

    def _delivered(self, app: str, future: asyncio.Future[Any]) -> None:
        self._in_flight.discard(future)
        try:
            if future.cancelled():
                self._failed(app, "unsent", "reag recorder: event unsent at close")
            elif (exc := future.exception()) is not None:
                self._failed(
                    app,
                    "delivery",
                    "reag recorder: Kafka refused an event (%s)",
                    type(exc).__name__,
                )
            else:
                self._count(app, "recorded")
        finally:
            self._queue.task_done()

    def _fail_queued(self, reason: str) -> None:
        lost = 0
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            lost += 1
            with contextlib.suppress(Exception):
                self._count(item.app, "failed")
            self._queue.task_done()
        if lost:
            log.warning("reag recorder: %d events not sent: %s", lost, reason)


def _default_key() -> bytes | None:
    """``REAG_PSEUDONYM_KEY`` or the embedded stack's key; None (a key for this process
    only) with a warning: the recorder never writes a key file into an app's directory."""
    key = configured_key(ReagSettings())
    if key is None:
        log.warning(
            "reag recorder: no pseudonym key (REAG_PSEUDONYM_KEY, or pseudonym_key=); user "
            "ids that carry PII get pseudonyms that change when this process restarts"
        )
    return key


def _text_length(exchange: LiveExchange) -> int:
    """Characters in the exchange's text fields: a lower bound of its size in bytes, known
    without encoding anything (attributes are counted when the event is built)."""
    total = 0
    for value in (
        exchange.query,
        exchange.response,
        exchange.user_id,
        exchange.request_id,
        exchange.persona_hint,
        exchange.description,
        exchange.target,
    ):
        if isinstance(value, str):
            total += len(value)
    return total


def _with_derived_id(exchange: LiveExchange) -> LiveExchange:
    """``exchange`` with the request id its content, user and time give (and that time)."""
    created_at = exchange.created_at if exchange.created_at is not None else time.time()
    request_id = request_id_for(
        str(exchange.query), str(exchange.response), str(exchange.user_id), int(created_at * 1e9)
    )
    return replace(exchange, request_id=request_id, created_at=created_at)
