"""Builds the Kafka broker every service uses: security, delivery and middlewares.

Tracing and Prometheus come from FastStream's broker middlewares (not code in
handlers): spans are named ``<topic> publish`` / ``<topic> process`` and the
W3C trace context travels in Kafka headers.
"""

from __future__ import annotations

from faststream.kafka import KafkaBroker
from faststream.kafka.opentelemetry import KafkaTelemetryMiddleware
from faststream.kafka.prometheus import KafkaPrometheusMiddleware
from faststream.security import BaseSecurity, SASLPlaintext, SASLScram256, SASLScram512
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import REGISTRY, CollectorRegistry

from services.kit.settings import KafkaSettings
from services.kit.telemetry import quiet_kafka_client_logs


def security_for(kafka: KafkaSettings) -> BaseSecurity | None:
    context = kafka.ssl_context()
    if not kafka.security_protocol.startswith("SASL"):
        return BaseSecurity(ssl_context=context) if context else None
    # KafkaSettings checked that SASL comes with credentials.
    assert kafka.sasl_username
    assert kafka.sasl_password
    password = kafka.sasl_password.get_secret_value()
    cls = {"PLAIN": SASLPlaintext, "SCRAM-SHA-256": SASLScram256, "SCRAM-SHA-512": SASLScram512}[
        kafka.sasl_mechanism
    ]
    return cls(
        kafka.sasl_username,
        password,
        ssl_context=context,
        use_ssl=kafka.security_protocol == "SASL_SSL",
    )


def make_broker(
    kafka: KafkaSettings,
    service: str,
    *,
    tracer_provider: TracerProvider | None = None,
    registry: CollectorRegistry = REGISTRY,
) -> KafkaBroker:
    """acks=all: an output counts only once the in-sync replicas have it."""
    quiet_kafka_client_logs()
    return KafkaBroker(
        kafka.bootstrap_servers.split(","),
        security=security_for(kafka),
        client_id=f"reag-{service}",
        acks="all",
        enable_idempotence=kafka.idempotent_producer,
        max_request_size=max(kafka.max_event_bytes * 2, 1_048_576),
        middlewares=(
            KafkaTelemetryMiddleware(tracer_provider=tracer_provider),
            KafkaPrometheusMiddleware(
                registry=registry, app_name=service, metrics_prefix="reag_faststream"
            ),
        ),
    )
