"""``reag.v1.TrafficService``: live traffic from apps in any language, onto ``reag.traffic.v1``.

What the Python recorder (``reag.client``) does in process, over gRPC: check
the exchange, build the ``ORIGIN_LIVE`` event, redact it under its app's
policy, then produce it keyed by case id and answer only once the broker has
acknowledged (acks=all). It produces to Kafka, which the core may not, so it
lives on the services' floor and is served beside the results API on the
ledger's gRPC port (``ResultsServer.add_service``).

Nothing is dropped silently: an exchange the pipeline would dead-letter is
refused (INVALID_ARGUMENT, or FAILED_PRECONDITION for an app with no corpus),
and a broker fault is UNAVAILABLE so the client retries. Refusals and logs name
fields and case ids, never the text of a query or response.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import grpc
from faststream.kafka import KafkaBroker
from google.protobuf.timestamp_pb2 import Timestamp

from reag import metrics
from reag.ids import case_id_for
from reag.traffic.redaction import Redactor
from reag.v1 import api_pb2, api_pb2_grpc
from reag.v1 import events_pb2 as pb
from services.kit.topology import SERVICES, TRAFFIC, suffixed

log = logging.getLogger("reag.ledger.traffic")

SERVICE_NAME = "reag.v1.TrafficService"
CONTENT_TYPE = "application/x-protobuf"

Produce = Callable[[str, bytes, bytes], Awaitable[None]]
"""``produce(topic, value, key)``: returns once the broker has acknowledged, raises if not."""
RedactorFor = Callable[[str], Redactor]
AppCheck = Callable[[str], bool]


class RefusedError(Exception):
    """An exchange that cannot go on the topic; ``reason`` names fields, not their values."""

    def __init__(self, code: grpc.StatusCode, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


def broker_producer(broker: KafkaBroker) -> Produce:
    """Produces with the ledger's own broker: acks=all, tracing and metrics middlewares."""

    async def produce(topic: str, value: bytes, key: bytes) -> None:
        # no_confirm=False (the default): publish returns once the broker has acknowledged.
        await broker.publish(
            value,
            topic,
            key=key,
            headers={"content-type": CONTENT_TYPE, "x-reag-type": "Traffic"},
        )

    return produce


class TrafficServicer(api_pb2_grpc.TrafficServiceServicer):
    """``redactor_for(app)`` is the app's policy redactor; ``app_known(app)``: has a corpus here.

    Both read the SQL store (with their own short caches), so they run in a
    worker thread, one call at a time: the caches are not thread-safe, and a
    store query must not stall the event loop the ledger's consumers share.
    """

    def __init__(
        self,
        *,
        produce: Produce,
        redactor_for: RedactorFor,
        app_known: AppCheck,
        topic_suffix: str = "",
        max_event_bytes: int = 1_048_576,
        clock: Callable[[], float] = time.time,
    ) -> None:
        topic = TRAFFIC + topic_suffix
        if not suffixed(SERVICES["ledger"], topic_suffix).may_publish(topic):
            raise ValueError(
                f"the ledger does not declare {topic} as an output; see services/kit/topology.py"
            )
        self._produce = produce
        self._redactor_for = redactor_for
        self._app_known = app_known
        self._topic = topic
        self._max_event_bytes = max_event_bytes
        self._clock = clock
        self._lookups = threading.Lock()

    async def Submit(  # noqa: N802 - the gRPC method name
        self, request: api_pb2.SubmitRequest, context: grpc.aio.ServicerContext
    ) -> api_pb2.SubmitResponse:
        try:
            event = await asyncio.to_thread(self._prepare, request)
        except RefusedError as exc:
            await context.abort(exc.code, exc.reason)
            raise  # unreachable: abort raises
        await self._send(event, context)
        return api_pb2.SubmitResponse(case_id=event.meta.case_id, accepted=True)

    async def SubmitStream(  # noqa: N802
        self,
        request_iterator: AsyncIterator[api_pb2.SubmitRequest],
        context: grpc.aio.ServicerContext,
    ) -> api_pb2.SubmitSummary:
        summary = api_pb2.SubmitSummary()
        async for request in request_iterator:
            summary.received += 1
            try:
                event = await asyncio.to_thread(self._prepare, request)
            except RefusedError as exc:
                # One bad exchange must not cost the others on the stream.
                summary.refused += 1
                summary.results.add(accepted=False, reason=exc.reason)
                continue
            await self._send(event, context)
            summary.accepted += 1
            summary.results.add(case_id=event.meta.case_id, accepted=True)
        return summary

    def _prepare(self, request: api_pb2.SubmitRequest) -> pb.Traffic:
        """The redacted event to produce, or ``RefusedError`` for what the pipeline would refuse."""
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
        event = _live_event(traffic, app, self._clock())
        redacted, _ = redactor.traffic(event, where="grpc")
        size = redacted.ByteSize()
        if size > self._max_event_bytes:
            raise RefusedError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"the event is {size} bytes, over the {self._max_event_bytes}-byte limit "
                "(REAG_KAFKA__MAX_EVENT_BYTES)",
            )
        return redacted

    async def _send(self, event: pb.Traffic, context: grpc.aio.ServicerContext) -> None:
        case_id = event.meta.case_id
        try:
            await self._produce(self._topic, event.SerializeToString(), case_id.encode())
        except Exception as exc:  # noqa: BLE001 - any failure to get an ack is a retry, not a drop
            log.warning("case %s not produced to %s: %s", case_id, self._topic, type(exc).__name__)
            await context.abort(
                grpc.StatusCode.UNAVAILABLE,
                f"the broker did not acknowledge case {case_id}; retry the call",
            )
        metrics.EVENTS_PUBLISHED.labels("ledger", self._topic).inc()


def _live_event(traffic: pb.Traffic, app: str, now: float) -> pb.Traffic:
    """``traffic`` with the meta reag sets on live traffic (as ``reag.traffic.live`` does).

    A request without an id gets a random one, so it still has a case; one with
    an id keeps its case id across retries, so a retried event dedups downstream.
    """
    event = pb.Traffic()
    event.CopyFrom(traffic)
    if not event.request_id:
        event.request_id = uuid.uuid4().hex
    meta = event.meta
    meta.case_id = case_id_for(app, event.request_id)
    meta.app = app
    meta.schema_version = pb.SCHEMA_VERSION_1
    meta.origin = pb.ORIGIN_LIVE
    if not meta.HasField("created_at"):
        created = Timestamp()
        created.FromNanoseconds(int(now * 1e9))
        meta.created_at.CopyFrom(created)
    return event
