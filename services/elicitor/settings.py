"""Settings of the elicitor (env prefix ``REAG_``; Kafka under ``REAG_KAFKA__``)."""

from __future__ import annotations

from pydantic import Field

from services.kit.settings import ServiceSettings


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
