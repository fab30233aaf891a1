"""Settings every part of the cascade must agree on: tier models and annotators.

The judges, the calibrator and ``reag calibrate --labels`` all read these
(``REAG_TIER_MODELS``, ``REAG_ANNOTATORS``, ...), so that scores stored during
calibration were made with exactly the prompts the live judges use; a
threshold fit on other prompts would say nothing about live confidences.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from reag.judging.judge import JudgeConfig
from reag.settings import ReagSettings

N_TIERS = 3

EMBEDDED_TIER_MODELS = "local:qwen2.5-coder-1.5b-instruct"
EMBEDDED_TIER_ANNOTATORS = "1"
"""The embedded default, chosen by the sweep of every local judge on the example's labelled
set (bench.verdicts, docs/cascade.md): one tier, Qwen2.5-Coder 1.5B with one annotator.
SmolLM2 and the 0.5B model judge near chance there, so a tier of either only adds cost, and
three annotators of the 1.5B model accept no more at α = 0.30 than one does."""


class CascadeSettings(ReagSettings):
    tier_models: str = Field(
        default=EMBEDDED_TIER_MODELS,
        description=(
            "Comma-separated model per tier, cheapest first, e.g. 'gemini:gemini-2.5-flash-lite,"
            "openai:gpt-4.1-mini,gemini:gemini-2.5-flash'; the cascade has one tier per entry. "
            "An empty entry means the LLM layer's default model (REAG_LLM_MODEL); an empty "
            "list, three tiers of it. Unset: the embedded local cascade."
        ),
    )
    annotators: int = Field(
        default=5,
        ge=1,
        description="Simulated annotators N of every tier that REAG_TIER_ANNOTATORS leaves open.",
    )
    tier_annotators: str = Field(
        default=EMBEDDED_TIER_ANNOTATORS,
        description=(
            "Comma-separated annotators N per tier, cheapest first, e.g. '1,1,3': one model "
            "can serve two tiers at different N. An empty entry means REAG_ANNOTATORS; unset: "
            "the embedded cascade's."
        ),
    )
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
    undecidable_guard: bool = Field(
        default=True,
        description=(
            "Abstain (reason 'undecidable') on a criterion the response text cannot decide "
            "(reag.decidability), before any model call. On by default: it flags 1 of the 233 "
            "expert-labelled nutrition criteria (0.4 %, at most 3 % allowed; docs/cascade.md)."
        ),
    )

    @field_validator("tier_annotators")
    @classmethod
    def _counts(cls, value: str) -> str:
        entries = [e.strip() for e in value.split(",")] if value.strip() else []
        if len(entries) > N_TIERS:
            raise ValueError(f"names {len(entries)} counts; the cascade has {N_TIERS} tiers")
        for entry in entries:
            if entry and (not entry.isdigit() or int(entry) < 1):
                raise ValueError(f"{entry!r} is not an annotator count (a whole number ≥ 1)")
        return value

    def annotators_for(self, tier: int) -> int:
        """The tier's N: its REAG_TIER_ANNOTATORS entry, else REAG_ANNOTATORS."""
        entries = [e.strip() for e in self.tier_annotators.split(",")]
        entry = entries[tier - 1] if tier <= len(entries) else ""
        return int(entry) if entry else self.annotators

    def _model_names(self) -> list[str]:
        names = [m.strip() for m in self.tier_models.split(",")] if self.tier_models else []
        if len(names) > N_TIERS:
            raise ValueError(
                f"REAG_TIER_MODELS names {len(names)} models; the cascade has at most "
                f"{N_TIERS} tiers"
            )
        return names

    @property
    def n_tiers(self) -> int:
        """The cascade's depth: one tier per REAG_TIER_MODELS entry, all three when it is empty.

        A tier that does not earn its cost is left out by naming fewer models; the
        last tier's unconfident criteria go to review.
        """
        return len(self._model_names()) or N_TIERS

    def model_for(self, tier: int) -> str | None:
        """The tier's model, or None for the LLM layer's default."""
        names = self._model_names()
        if tier > len(names):
            return None
        return names[tier - 1] or None

    def judge_config(self, tier: int) -> JudgeConfig:
        return JudgeConfig(
            tier=tier,
            n_annotators=self.annotators_for(tier),
            k_examples=self.examples,
            seed=self.seed,
            n_samples=self.samples,
        )
