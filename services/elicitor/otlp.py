"""The elicitor's OTLP handler: spans on ``otlp_spans`` -> redacted ``pb.Traffic`` by case id.

Zero-code capture (``reag.traffic.otlp``): an app traced with OpenTelemetry
sends its spans through the Collector's Kafka exporter, and this handler turns
each trace's LLM exchange into a live traffic event on ``reag.traffic.v1``,
where the elicitor's traffic handler takes it like any other (shadow controls,
persona, onward). This is the first reag hop for those spans, so:

- every event is redacted under its app's policy before it is published;
- a message that cannot be parsed is dead-lettered with its bytes redacted by
  the default recognisers (``Redactor().raw``, cut to the size limit first when
  the message is oversized): a raw span carries prompts, answers and user ids,
  and the policy of an unparseable message's app cannot be known;
- logs and metrics carry counts, reasons and app names, never span content.

Spans of services that are not reag apps (no corpus in the store) are counted
as ``unknown_app`` and dropped rather than dead-lettered: the Collector exports
every service's spans, and a dead letter per foreign trace would bury the real
ones.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from faststream.kafka import KafkaRouter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from reag.metrics import OTLP_SPANS_SKIPPED, OTLP_TRAFFIC
from reag.traffic.otlp import OtlpDecodeError, parse_request, traffic_from_request
from reag.traffic.policy import PolicyDirectory
from reag.traffic.redaction import Redactor
from services.elicitor.settings import ElicitorSettings
from services.kit.codec import BadEventError, check_payload
from services.kit.delivery import Emit, consume
from services.kit.topology import OTLP_SPANS, SERVICES, TRAFFIC, suffixed

log = logging.getLogger("reag.elicitor.otlp")

AppCheck = Callable[[str], bool]


def build_otlp_router(
    settings: ElicitorSettings,
    policies: PolicyDirectory,
    app_known: AppCheck | None = None,
) -> KafkaRouter:
    """``app_known`` (the persona directory's ``knows``) filters spans of non-reag services;
    None keeps every app (tests, a stack with one app)."""
    suffix = settings.topic_suffix
    spec = suffixed(SERVICES["elicitor"], suffix)
    otlp = settings.otlp
    hint = None if otlp.encoding == "auto" else otlp.encoding
    max_bytes = settings.kafka.max_event_bytes
    default_redactor = Redactor()
    router = KafkaRouter()

    def decode(value: bytes | None) -> ExportTraceServiceRequest:
        data = check_payload(value, "ExportTraceServiceRequest", max_bytes=max_bytes)
        try:
            return parse_request(data, hint)
        except OtlpDecodeError as exc:
            raise BadEventError("undecodable", str(exc)) from exc

    @consume(
        router,
        spec,
        OTLP_SPANS + suffix,
        ExportTraceServiceRequest,
        max_event_bytes=max_bytes,
        delivery=settings.delivery,
        decode=decode,
        scrub=lambda data: default_redactor.raw(data, max_bytes=max_bytes),
    )
    async def capture(request: ExportTraceServiceRequest) -> list[Emit]:
        # Apps and policies are read from the store when their cache has expired: the
        # whole step runs off the event loop.
        return await asyncio.to_thread(convert, request)

    def convert(request: ExportTraceServiceRequest) -> list[Emit]:
        # The payload's size was checked before it was parsed (decode); what it converts
        # to is bounded by the same limit before anything is redacted.
        conversion = traffic_from_request(request, app=otlp.app, max_bytes=max_bytes)
        if conversion.spans == 0:
            # The Collector never exports an empty request; bytes that parse as one are
            # something else (another topic's event, a stray producer), found by fuzzing.
            raise BadEventError(
                "no_spans", "an ExportTraceServiceRequest without a single span: not OTLP traces"
            )
        for reason, n in conversion.skipped.items():
            OTLP_SPANS_SKIPPED.labels(reason).inc(n)
        emits = []
        for raw in conversion.events:
            app = raw.meta.app
            if app_known is not None and not app_known(app):
                OTLP_SPANS_SKIPPED.labels("unknown_app").inc()
                continue
            event = policies.redact(raw, where="otlp")
            OTLP_TRAFFIC.labels(app).inc()
            emits.append(Emit(TRAFFIC + suffix, event, event.meta.case_id))
        log.debug(
            "%d span(s) gave %d traffic event(s); skipped %s",
            conversion.spans,
            len(emits),
            dict(conversion.skipped),
        )
        return emits

    return router
