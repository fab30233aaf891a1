"""``reag.v1.TrafficService``: live traffic from apps in any language, onto the traffic topic.

What the Python recorder (``reag.client``) does in process, over gRPC: check
the exchange and its size, build the ``ORIGIN_LIVE`` event, redact it under
its app's policy, then hand it to ``produce`` keyed by case id and answer only
once the broker has acknowledged (acks=all). Producing is injected: the core
knows no Kafka, and the process that serves this (the ledger, beside its
results API: docs/architecture.md) passes its own broker's publish.

Hostile input is bounded before any pattern runs: gRPC refuses a message over
the size limit before reading it (``RECEIVE_SLACK_BYTES`` above it, set on the
server by whoever serves this), and every exchange is checked against the
limit before redaction, then again after (redaction can grow an event).

Nothing is dropped silently: an exchange the pipeline would dead-letter is
refused (INVALID_ARGUMENT, or FAILED_PRECONDITION for an app with no corpus),
and a broker fault is UNAVAILABLE, per exchange on a stream, so the client
retries. A request without an id gets one derived from its content, user and
client timestamp (``reag.ids.request_id_for``), so a retry lands on the same
case. Refusals and logs name fields and case ids, never the text of a query
or response.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from reag import metrics
from reag.ids import case_id_for, request_id_for
from reag.traffic.redaction import Redactor, TooLargeError, check_size
from reag.v1 import api_pb2, api_pb2_grpc
from reag.v1 import events_pb2 as pb

log = logging.getLogger("reag.traffic.ingress")

SERVICE_NAME = "reag.v1.TrafficService"
RECEIVE_SLACK_BYTES = 65_536
"""What gRPC may receive above the event limit: the request's envelope, and room to
answer a slightly oversized exchange with a reason rather than RESOURCE_EXHAUSTED."""

Produce = Callable[[str, bytes, bytes], Awaitable[None]]
"""``produce(topic, value, key)``: returns once the broker has acknowledged, raises if not."""
RedactorFor = Callable[[str], Redactor]
AppCheck = Callable[[str], bool]


def max_receive_bytes(max_event_bytes: int) -> int:
    """The gRPC receive limit for a server taking events of at most ``max_event_bytes``."""
    return max_event_bytes + RECEIVE_SLACK_BYTES


class RefusedError(Exception):
    """An exchange that cannot go on the topic; ``reason`` names fields, not their values."""

    def __init__(self, code: grpc.StatusCode, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


class UnacknowledgedError(Exception):
    """The broker did not acknowledge a case: a transient fault, the client sends it again."""

    def __init__(self, case_id: str) -> None:
        super().__init__(f"the broker did not acknowledge case {case_id}; retry the call")
        self.case_id = case_id


class TrafficIngress(api_pb2_grpc.TrafficServiceServicer):
    """``redactor_for(app)`` is the app's policy redactor; ``app_known(app)``: has a corpus here.

    Both read the SQL store (with their own short caches), so they run in a
    worker thread, one call at a time: the caches are not thread-safe, and a
    store query must not stall the event loop the serving process shares.
    ``service`` names the serving process in the published-events metric.
    """

    def __init__(
        self,
        *,
        produce: Produce,
        redactor_for: RedactorFor,
        app_known: AppCheck,
        topic: str,
        max_event_bytes: int,
        service: str = "ledger",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._produce = produce
        self._redactor_for = redactor_for
        self._app_known = app_known
        self.topic = topic
        self._max_event_bytes = max_event_bytes
        self._service = service
        self._clock = clock
        self._lookups = threading.Lock()

    async def Submit(  # noqa: N802 - the gRPC method name
        self, request: api_pb2.SubmitRequest, context: grpc.aio.ServicerContext
    ) -> api_pb2.SubmitResponse:
        try:
            event = await asyncio.to_thread(self.prepare, request)
        except RefusedError as exc:
            await context.abort(exc.code, exc.reason)
            raise  # unreachable: abort raises
        try:
            await self._send(event)
        except UnacknowledgedError as exc:
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        return api_pb2.SubmitResponse(case_id=event.meta.case_id, accepted=True)

    async def SubmitStream(  # noqa: N802
        self,
        request_iterator: AsyncIterator[api_pb2.SubmitRequest],
        context: grpc.aio.ServicerContext,
    ) -> api_pb2.SubmitSummary:
        summary = api_pb2.SubmitSummary()
        broker_down = False
        async for request in request_iterator:
            summary.received += 1
            try:
                event = await asyncio.to_thread(self.prepare, request)
            except RefusedError as exc:
                # One bad exchange must not cost the others on the stream.
                summary.refused += 1
                summary.results.add(accepted=False, reason=exc.reason)
                continue
            case_id = event.meta.case_id
            if not broker_down:
                try:
                    await self._send(event)
                except UnacknowledgedError:
                    broker_down = True  # the rest would wait out the same timeout
                else:
                    summary.accepted += 1
                    summary.results.add(case_id=case_id, accepted=True)
                    continue
            summary.refused += 1
            summary.unavailable += 1
            summary.results.add(
                case_id=case_id,
                accepted=False,
                retry=True,
                reason="the broker did not acknowledge this or an earlier exchange; send it again",
            )
        return summary

    def prepare(self, request: api_pb2.SubmitRequest) -> pb.Traffic:
        """The redacted event to produce, or ``RefusedError`` for what the pipeline would refuse.

        The size is checked before any redaction pattern runs, and again after.
        """
        try:
            check_size(request.ByteSize(), self._max_event_bytes, "the exchange")
        except TooLargeError as exc:
            raise RefusedError(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from exc
        traffic = request.traffic
        app = request.app or traffic.meta.app
        if not app:
            raise RefusedError(grpc.StatusCode.INVALID_ARGUMENT, "app is required")
        if request.app and traffic.meta.app and request.app != traffic.meta.app:
            raise RefusedError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"app {request.app!r} differs from traffic.meta.app {traffic.meta.app!r}",
            )
        for name in ("query", "actual_response"):
            if not getattr(traffic, name).strip():
                raise RefusedError(grpc.StatusCode.INVALID_ARGUMENT, f"traffic.{name} is empty")
        latency = traffic.response_latency_s
        if not math.isfinite(latency) or latency < 0:
            raise RefusedError(
                grpc.StatusCode.INVALID_ARGUMENT,
                "traffic.response_latency_s is not a non-negative number",
            )
        with self._lookups:
            if not self._app_known(app):
                raise RefusedError(
                    grpc.StatusCode.FAILED_PRECONDITION,
                    f"app {app!r} has no corpus here; add it with `reag corpus add --manifest ...`",
                )
            redactor = self._redactor_for(app)
        event = live_event(traffic, app, self._clock())
        redacted, _ = redactor.traffic(event, where="grpc")
        try:
            check_size(redacted.ByteSize(), self._max_event_bytes, "the redacted event")
        except TooLargeError as exc:
            raise RefusedError(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from exc
        return redacted

    async def _send(self, event: pb.Traffic) -> None:
        case_id = event.meta.case_id
        try:
            await self._produce(self.topic, event.SerializeToString(), case_id.encode())
        except Exception as exc:  # any failure to get an ack is a retry, not a drop
            log.warning("case %s not produced to %s: %s", case_id, self.topic, type(exc).__name__)
            raise UnacknowledgedError(case_id) from exc
        metrics.EVENTS_PUBLISHED.labels(self._service, self.topic).inc()


def live_event(traffic: pb.Traffic, app: str, now: float) -> pb.Traffic:
    """``traffic`` with the meta reag sets on live traffic (as ``reag.traffic.live`` does).

    A request without an id gets one derived from its query, response, user and
    client timestamp (``meta.created_at``, else ``now``), so a retry of the same
    call keeps its case; one with an id keeps its case id across retries too.
    """
    event = pb.Traffic()
    event.CopyFrom(traffic)
    meta = event.meta
    if not meta.HasField("created_at"):
        created = Timestamp()
        created.FromNanoseconds(int(now * 1e9))
        meta.created_at.CopyFrom(created)
    if not event.request_id:
        event.request_id = request_id_for(
            event.query,
            event.actual_response,
            event.profile.user_id,
            meta.created_at.ToNanoseconds(),
        )
    meta.case_id = case_id_for(app, event.request_id)
    meta.app = app
    meta.schema_version = pb.SCHEMA_VERSION_1
    meta.origin = pb.ORIGIN_LIVE
    return event


def origin_untrusted(event: pb.Traffic) -> pb.Traffic:
    """``event`` as the shadow gate must see it when it came from the ingress topic.

    Anyone who can produce to ``reag.traffic.v1`` can write ``ORIGIN_SYNTHETIC``
    into an event, and the gate spares synthetic cases its sampling and rate limit;
    so on that topic the claim is ignored: the gate sees a live case. (reag's own
    probes, ``reag elicit``, are admitted by the app's shadow policy like any
    traffic.) The event itself, origin included, goes on unchanged.
    """
    if event.meta.origin != pb.ORIGIN_SYNTHETIC:
        return event
    seen = pb.Traffic()
    seen.CopyFrom(event)
    seen.meta.origin = pb.ORIGIN_LIVE
    return seen
