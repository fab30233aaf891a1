"""Logging and tracing set-up, done once per service process in ``main.py``.

Log lines carry ids (case, criterion, topic, offset), never event payloads:
queries, responses and user profiles (health data) stay out of logs.
"""

from __future__ import annotations

import logging

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider


def configure_logging(level: str, service: str) -> None:
    logging.basicConfig(
        level=level.upper(),
        format=f"%(asctime)s %(levelname)s {service} %(name)s: %(message)s",
        force=True,
    )
    quiet_kafka_client_logs()


def quiet_kafka_client_logs() -> None:
    """Holds aiokafka at WARNING whatever the service's own level.

    Its DEBUG lines print every produced event's bytes ("Sending (key=..., value=...)"),
    which carry users' queries and profile descriptions (health data) even after
    redaction, and it logs every rebalance at INFO. Called by every reag broker too.
    """
    logging.getLogger("aiokafka").setLevel(logging.WARNING)


def configure_tracing(service: str, otlp_endpoint: str | None) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": f"reag-{service}"}))
    if otlp_endpoint:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{otlp_endpoint}/v1/traces"))
        )
    trace.set_tracer_provider(provider)
    return provider
