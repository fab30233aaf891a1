"""Settings every service shares: where Kafka is and how to reach it safely.

The same code runs on the embedded Tansu broker and on Apache Kafka in
production; only these values change (``REAG_KAFKA__BOOTSTRAP_SERVERS``,
``REAG_KAFKA__SECURITY_PROTOCOL``, ...).
"""

from __future__ import annotations

import ssl
from typing import Literal

from pydantic import BaseModel, Field, SecretStr, model_validator

from reag.settings import ReagSettings

SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]


class KafkaSettings(BaseModel):
    bootstrap_servers: str = Field(
        default="127.0.0.1:9092", description="Comma-separated host:port list of brokers."
    )
    security_protocol: SecurityProtocol = Field(
        default="PLAINTEXT", description="PLAINTEXT locally; SASL_SSL on a managed Kafka."
    )
    sasl_mechanism: SaslMechanism = Field(default="PLAIN", description="SASL mechanism.")
    sasl_username: str | None = Field(default=None, description="SASL user name.")
    sasl_password: SecretStr | None = Field(default=None, description="SASL password.")
    ssl_cafile: str | None = Field(default=None, description="CA bundle to verify brokers.")
    ssl_certfile: str | None = Field(default=None, description="Client certificate (mTLS).")
    ssl_keyfile: str | None = Field(default=None, description="Client key (mTLS).")
    partitions: int = Field(default=3, ge=1, description="Partitions of topics reag creates.")
    replication_factor: int = Field(default=1, ge=1, description="Replication of new topics.")
    idempotent_producer: bool = Field(
        default=False,
        description=(
            "Kafka idempotent producer. Off by default: the embedded Tansu broker does not "
            "implement InitProducerId. Downstream dedup by key makes duplicates harmless "
            "either way."
        ),
    )
    max_event_bytes: int = Field(
        default=1_048_576,
        ge=1024,
        description="Events larger than this are dead-lettered as oversized, never processed.",
    )
    ingress_retention_ms: int = Field(
        default=3_600_000,
        ge=60_000,
        description=(
            "retention.ms of the topics raw traffic lands on before reag redacts it "
            "(reag.traffic.v1, otlp_spans), set when reag creates them: raw spans and "
            "events carry PII, so they are not kept longer than a consumer may lag."
        ),
    )

    @model_validator(mode="after")
    def _sasl_needs_credentials(self) -> KafkaSettings:
        if self.security_protocol.startswith("SASL") and not (
            self.sasl_username and self.sasl_password
        ):
            raise ValueError(
                f"security_protocol={self.security_protocol} needs sasl_username and "
                "sasl_password (REAG_KAFKA__SASL_USERNAME / REAG_KAFKA__SASL_PASSWORD)"
            )
        return self

    def ssl_context(self) -> ssl.SSLContext | None:
        if self.security_protocol not in ("SSL", "SASL_SSL"):
            return None
        context = ssl.create_default_context(cafile=self.ssl_cafile)
        if self.ssl_certfile:
            context.load_cert_chain(self.ssl_certfile, self.ssl_keyfile)
        return context


class DeliverySettings(BaseModel):
    """How the consume path waits out transient faults and parks apps not loaded yet
    (docs/pipeline.md, "Delivery")."""

    max_in_flight: int = Field(
        default=64,
        ge=1,
        description=(
            "Events one consumer (one topic of one replica) handles at once; events with the "
            "same key still run one after another, and commits cover each partition's done "
            "prefix only. 64 was the fastest setting bench.pipeline measured "
            "(docs/pipeline.md, 'In flight'); 1 handles one event at a time."
        ),
    )
    retry_initial_s: float = Field(
        default=1.0,
        gt=0,
        description=(
            "Wait before the first retry of an event that met a transient fault (database, "
            "broker, LLM outage, spent budget); each further retry waits twice as long."
        ),
    )
    retry_max_s: float = Field(
        default=60.0,
        gt=0,
        description="Longest wait between two retries of a transient fault (the backoff's cap).",
    )
    park_s: float = Field(
        default=600.0,
        ge=0,
        description=(
            "How long an event whose app has no corpus yet is parked and retried before it is "
            "dead-lettered as app_not_loaded (replayable with `reag dlq replay`)."
        ),
    )
    park_max_events: int = Field(
        default=1000,
        ge=1,
        description=(
            "Events one consumer may hold parked; when full, the partition pauses as for a "
            "transient fault until the park drains. Bounds memory and the redelivery a crash "
            "causes (a parked event holds back its partition's committed offset)."
        ),
    )
    park_max_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=1,
        description=(
            "Bytes (values, keys and headers) one consumer may hold parked; when the next "
            "event would pass it, the partition pauses as when park_max_events is reached. An "
            "empty park always takes one event, so an event larger than this still parks."
        ),
    )
    max_transient_attempts: int = Field(
        default=30,
        ge=1,
        description=(
            "Tries of one event that may meet a transient fault; the last failed try "
            "dead-letters it as transient_exhausted (replayable with `reag dlq replay`), so "
            "a fault the event itself causes cannot hold its partition forever."
        ),
    )
    max_transient_s: float = Field(
        default=1800.0,
        gt=0,
        description=(
            "Seconds from an event's first transient fault after which a further fault "
            "dead-letters it as transient_exhausted, whatever the count of tries."
        ),
    )
    dead_letter_max_bytes: int = Field(
        default=1_000_000,
        ge=4096,
        description=(
            "Largest dead letter written: a larger one has its payload cut to fit, with a note "
            "of the sizes before and after, and is no longer replayable. Below Apache Kafka's "
            "default message.max.bytes (1,048,588) and the producer's max request size."
        ),
    )


class ServiceSettings(ReagSettings):
    """Base of every service's settings class."""

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    http_host: str = Field(default="127.0.0.1", description="Bind address of /metrics, /healthz.")
    http_port: int = Field(default=0, description="Port of /metrics and /healthz; 0 = pick one.")
    otlp_endpoint: str | None = Field(
        default=None, description="OTLP/HTTP endpoint for traces; unset = traces stay in-process."
    )
    delivery: DeliverySettings = Field(
        default_factory=DeliverySettings,
        description="Retry and park settings of the consume path (REAG_DELIVERY__*).",
    )
    topic_suffix: str = Field(
        default="",
        description=(
            "Appended to every topic name but the DLQ (topology.suffixed); isolates test runs "
            "that share one broker. Empty in production."
        ),
    )
