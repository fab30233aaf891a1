"""Settings of the elicitor (env prefix ``REAG_``; Kafka under ``REAG_KAFKA__``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from services.kit.settings import ServiceSettings


class OtlpSettings(BaseModel):
    """Zero-code capture: OTLP spans from the Collector's Kafka exporter (``REAG_OTLP__*``)."""

    enabled: bool = Field(
        default=True,
        description=(
            "Consume otlp_spans and turn LLM spans into traffic events; off leaves the topic "
            "to other consumers and saves the consumer group."
        ),
    )
    encoding: Literal["auto", "otlp_proto", "otlp_json"] = Field(
        default="auto",
        description=(
            "The exporter's `encoding`; auto reads a payload starting with `{` as otlp_json, "
            "anything else as otlp_proto."
        ),
    )
    app: str | None = Field(
        default=None,
        description=(
            "The reag app of every span; unset: the resource attribute reag.app, else service.name."
        ),
    )


class ElicitorSettings(ServiceSettings):
    persona_cache_s: float = Field(
        default=60.0,
        ge=0,
        description=(
            "Seconds an app's persona categories are kept before the corpus store is read "
            "again; a re-ingested corpus is seen within this time."
        ),
    )
    policy_cache_s: float = Field(
        default=30.0,
        ge=0,
        description=(
            "Seconds an app's traffic policy (redaction, sampling, budgets) is kept before "
            "the store is read again; `reag corpus add` with a changed manifest is seen "
            "within this time."
        ),
    )
    otlp: OtlpSettings = Field(default_factory=OtlpSettings)
