"""Settings of the requirements agents (env prefix ``REAG_SPEC_``).

Output budgets (``max_tokens``) default small so that a whole draft on the
local 270M model finishes in minutes on a 2-core machine; raise them for a
capable model, whose sections deserve more than 128 tokens.

Each agent has its own model, temperature and output budget. Temperatures
default to the Agent4RE paper's table 3: the orchestrator coordinates at 0.5,
interviewer and stakeholder explore at 1.0, the generator writes at 0.8, the
refactor agent stays consistent at 0.2. Nested values use ``__``, e.g.
``REAG_SPEC_GENERATOR__TEMPERATURE=0.7`` or
``REAG_SPEC_JUDGE__MODEL=openai:gpt-4.1-mini``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, model_validator
from pydantic_settings import SettingsConfigDict

from reag.settings import ReagSettings

# The paper's cap on elicitation turns (section 3.1): the exit tool's loop counter.
MAX_ELICITATION_TURNS = 10


class AgentSettings(BaseModel):
    model: str | None = Field(
        default=None,
        description="Model string, e.g. 'local:gemma-3-270m' or 'openai:gpt-4.1'. "
        "Unset: the LLM layer's default model.",
    )
    temperature: float = Field(ge=0.0, le=2.0, description="Sampling temperature.")
    max_tokens: int = Field(gt=0, le=8192, description="Output budget of one call.")


_AGENT_DEFAULTS: dict[str, AgentSettings] = {
    "orchestrator": AgentSettings(temperature=0.5, max_tokens=200),
    "interviewer": AgentSettings(temperature=1.0, max_tokens=96),
    "report": AgentSettings(temperature=1.0, max_tokens=320),
    "stakeholder": AgentSettings(temperature=1.0, max_tokens=128),
    "generator": AgentSettings(temperature=0.8, max_tokens=128),
    "refactor": AgentSettings(temperature=0.2, max_tokens=384),
    "judge": AgentSettings(temperature=0.0, max_tokens=384),
}


class SpecSettings(ReagSettings):
    model_config = SettingsConfigDict(
        env_prefix="REAG_SPEC_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        env_nested_delimiter="__",
    )

    orchestrator: AgentSettings = Field(
        default=_AGENT_DEFAULTS["orchestrator"],
        description="Summarises the brief; its structural validation needs no model.",
    )
    interviewer: AgentSettings = Field(
        default=_AGENT_DEFAULTS["interviewer"],
        description="Asks one elicitation question per turn, or calls the exit tool.",
    )
    report: AgentSettings = Field(
        default=_AGENT_DEFAULTS["report"],
        description="The interviewer's elicitation report; the interviewer's temperature by "
        "default, with a larger output budget.",
    )
    stakeholder: AgentSettings = Field(
        default=_AGENT_DEFAULTS["stakeholder"],
        description="Answers each question from the summary and its domain knowledge.",
    )
    generator: AgentSettings = Field(
        default=_AGENT_DEFAULTS["generator"],
        description="Writes one template section per call; max_tokens is per section.",
    )
    refactor: AgentSettings = Field(
        default=_AGENT_DEFAULTS["refactor"],
        description="Turns quality findings into improvement commands.",
    )
    judge: AgentSettings = Field(
        default=_AGENT_DEFAULTS["judge"],
        description="LLM-as-judge of `reag spec eval`; grading wants a capable model.",
    )
    max_turns: int = Field(
        default=MAX_ELICITATION_TURNS,
        ge=1,
        le=MAX_ELICITATION_TURNS,
        description="Elicitation turns before the loop stops without the exit tool.",
    )
    max_corrections: int = Field(
        default=2,
        ge=0,
        le=5,
        description="Times the orchestrator sends unfilled sections back to the generator.",
    )
    seed: int | None = Field(default=None, description="Sampling seed where the model takes one.")
    # The two character budgets below keep prompts inside the default local
    # model's 4,096-token context (REAG_LLM_LOCAL_CONTEXT) at ~4 characters a
    # token; raise them for a model with a larger window.
    refactor_max_draft_chars: int = Field(
        default=8000,
        gt=0,
        description="Characters of the draft the refactor agent sees; the rest is cut, "
        "at a line, with a marker saying so.",
    )
    judge_max_chars: int = Field(
        default=5000,
        gt=0,
        description="Characters of each document the judge sees; longer text is cut.",
    )

    @model_validator(mode="before")
    @classmethod
    def _complete_agents(cls, data: Any) -> Any:
        """One variable such as REAG_SPEC_GENERATOR__TEMPERATURE changes that field only;
        the agent's other defaults stay."""
        if not isinstance(data, dict):
            return data
        for name, default in _AGENT_DEFAULTS.items():
            given = data.get(name)
            if isinstance(given, dict):
                data[name] = {**default.model_dump(), **given}
        return data
