"""Settings of the oracle service (``REAG_ORACLE_*``; Kafka under ``REAG_KAFKA__``)."""

from __future__ import annotations

from pydantic import Field

from reag.oracle.grounding import CriteriaSource
from reag.oracle.prompt import PromptLimits
from services.kit.settings import ServiceSettings


class OracleSettings(ServiceSettings):
    oracle_model: str | None = Field(
        default=None,
        description=(
            "Model that writes oracles (REAG_ORACLE_MODEL); unset: REAG_LLM_MODEL. The paper "
            "uses a stronger model here than for self-reasoning."
        ),
    )
    oracle_attempts: int = Field(
        default=2,
        ge=1,
        le=5,
        description=(
            "Generations tried before an interpretation is dead-lettered as llm_output_invalid "
            "(each with the LLM client's own JSON repair attempt)."
        ),
    )
    oracle_temperature: float = Field(default=0.0, ge=0, le=2, description="First attempt.")
    oracle_retry_temperature: float = Field(
        default=0.7, ge=0, le=2, description="Later attempts, so a retry is not a repeat."
    )
    oracle_max_tokens: int = Field(
        default=1400, ge=128, description="Token limit per attempt (7 criteria of 5 fields)."
    )
    oracle_criteria: CriteriaSource = Field(
        default="draft",
        description=(
            "Where the judged criteria come from (REAG_ORACLE_CRITERIA): the model's checked "
            "draft, sentences quoted from the shown rules (reag.oracle.grounding), or the "
            "draft followed by quoted rules of the documents it left uncited. Chosen by "
            "`python -m bench cases --criteria` (docs/cases.md)."
        ),
    )
    oracle_max_documents: int = Field(
        default=8, ge=1, description="Retrieved documents quoted in the prompt."
    )
    oracle_max_doc_chars: int = Field(
        default=900, ge=100, description="Characters quoted from each document."
    )
    oracle_show_response: bool = Field(
        default=False,
        description=(
            "Show the app's actual response to the oracle writer (delimited as untrusted). "
            "Off by default: an oracle written while looking at the answer tends to describe it."
        ),
    )

    def prompt_limits(self) -> PromptLimits:
        return PromptLimits(
            max_documents=self.oracle_max_documents,
            max_doc_chars=self.oracle_max_doc_chars,
            show_response=self.oracle_show_response,
        )
