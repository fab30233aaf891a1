"""Settings every part of the cascade must agree on: tier models and annotators.

The judges, the calibrator and ``reag calibrate --labels`` all read these
(``REAG_TIER_MODELS``, ``REAG_ANNOTATORS``, ...), so that scores stored during
calibration were made with exactly the prompts the live judges use; a
threshold fit on other prompts would say nothing about live confidences.
"""

from __future__ import annotations

from pydantic import Field

from reag.judging.judge import JudgeConfig
from reag.settings import ReagSettings

N_TIERS = 3


class CascadeSettings(ReagSettings):
    tier_models: str = Field(
        default="",
        description=(
            "Comma-separated model per tier, cheapest first, e.g. 'gemini:gemini-2.5-flash-lite,"
            "openai:gpt-4.1-mini,gemini:gemini-2.5-flash'. An empty entry (or unset) means the "
            "LLM layer's default model (REAG_LLM_MODEL, local:gemma-3-270m)."
        ),
    )
    annotators: int = Field(default=5, ge=1, description="Simulated annotators N per tier.")
    examples: int = Field(
        default=3, ge=0, description="Expert-labelled examples K shown to each annotator."
    )
    seed: int = Field(default=0, description="Seed of the annotators' example draw.")
    samples: int | None = Field(
        default=None,
        ge=1,
        description=(
            "Samples per annotator at T=0.7 for models without log-probabilities; unset: "
            "REAG_LLM_SAMPLING_N."
        ),
    )

    def model_for(self, tier: int) -> str | None:
        """The tier's model, or None for the LLM layer's default."""
        names = [m.strip() for m in self.tier_models.split(",")] if self.tier_models else []
        if len(names) > N_TIERS:
            raise ValueError(
                f"REAG_TIER_MODELS names {len(names)} models; the cascade has {N_TIERS} tiers"
            )
        if tier > len(names):
            return None
        return names[tier - 1] or None

    def judge_config(self, tier: int) -> JudgeConfig:
        return JudgeConfig(
            tier=tier,
            n_annotators=self.annotators,
            k_examples=self.examples,
            seed=self.seed,
            n_samples=self.samples,
        )
