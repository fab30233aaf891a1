"""Settings of a judge deployment: which tier it is, and the cascade settings it shares.

The annotator settings (REAG_ANNOTATORS, REAG_EXAMPLES, REAG_SEED, REAG_SAMPLES)
and REAG_TIER_MODELS come from ``CascadeSettings``, which the calibrator and
``reag calibrate --labels`` read too: thresholds are only valid for the
prompts they were calibrated on.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from reag.judging.settings import N_TIERS, CascadeSettings
from reag.trust.audit import DEFAULT_AUDIT_RATE, DEFAULT_PROVISIONAL_AUDIT_RATE
from services.kit.settings import ServiceSettings


class JudgeSettings(ServiceSettings, CascadeSettings):
    tier: int = Field(
        default=1,
        ge=1,
        le=N_TIERS,
        description="This deployment's place in the cascade: 1 (cheapest) to 3.",
    )
    judge_model: str | None = Field(
        default=None,
        description=(
            "This tier's model, overriding its entry in REAG_TIER_MODELS; unset: that "
            "entry, else the LLM layer's default (local:gemma-3-270m, no judging skill)."
        ),
    )

    audit_rate: float = Field(
        default=DEFAULT_AUDIT_RATE,
        ge=0.0,
        le=1.0,
        description=(
            "Share of all criteria audited (REAG_AUDIT_RATE): picked by tier 1 from the "
            "criterion id before any tier decides, scored by every tier and sent to review, "
            "so the live risk can be checked (reag.trust). 0 turns audits off."
        ),
    )
    provisional_audit_rate: float = Field(
        default=DEFAULT_PROVISIONAL_AUDIT_RATE,
        ge=0.0,
        le=1.0,
        description=(
            "Share of criteria audited for an app whose threshold is provisional "
            "(REAG_PROVISIONAL_AUDIT_RATE): borrowed from another app on day one, so its "
            "audits are what certify or withdraw it (reag.trust.provisional). Every audit is "
            "a label a person gives: at 10 %, 1,000 criteria cost 100 labels."
        ),
    )

    @model_validator(mode="after")
    def _in_the_cascade(self) -> JudgeSettings:
        if self.tier > self.n_tiers:
            raise ValueError(
                f"tier {self.tier} is not in the cascade: REAG_TIER_MODELS names "
                f"{self.n_tiers} model(s), one per tier"
            )
        return self

    @property
    def service(self) -> str:
        return f"judge-tier{self.tier}"

    def model(self) -> str | None:
        return self.judge_model or self.model_for(self.tier)
