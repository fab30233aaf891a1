"""The run log of one ``reag spec draft``: every agent call, and what it cost.

Written as JSON next to the SRS. Each step keeps the agent's full input and
output, so a poor section can be traced to the prompt that produced it; the
totals per agent and per run have the shape of the Agent4RE paper's table 6
(output tokens, total tokens, seconds, USD).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from reag.llm.base import Message

AgentName = Literal["orchestrator", "interviewer", "stakeholder", "generator", "refactor", "judge"]


class LoggedMessage(BaseModel):
    role: str
    content: str


class AgentStep(BaseModel):
    """One call of one agent (a structured call's repair attempt is part of it)."""

    index: int
    agent: AgentName
    purpose: str = Field(description="What the call was for, e.g. 'question 3', 'section 2.1'.")
    round: int = Field(description="Refinement round: 0 for the initial sequential pass.")
    model: str
    temperature: float
    max_tokens: int
    input: list[LoggedMessage]
    output: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0
    n_calls: int = 1
    error: str | None = Field(
        default=None,
        description="Why the call produced no usable output. Tokens of a structured call "
        "that failed even after its repair are not reported back by the LLM layer, so such a "
        "step shows 0 tokens; the layer's Prometheus counters still charge them.",
    )


class Totals(BaseModel):
    """The paper's table 6 columns, plus the prompt side and call counts."""

    steps: int = 0
    calls: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = Field(
        default=0, description="Prompt tokens served from a cache (part of prompt_tokens)."
    )
    output_tokens: int = 0
    total_tokens: int = 0
    seconds: float = 0.0
    cost_usd: float = 0.0

    def add(self, step: AgentStep) -> None:
        self.steps += 1
        self.calls += step.n_calls
        self.prompt_tokens += step.prompt_tokens
        self.cached_tokens += step.cached_tokens
        self.output_tokens += step.completion_tokens
        self.total_tokens += step.prompt_tokens + step.completion_tokens
        self.seconds += step.seconds
        self.cost_usd += step.cost_usd


class ElicitationRecord(BaseModel):
    turns: int = 0
    stop_reason: Literal["exit_tool", "max_turns", "interviewer_error", "not_run"] = "not_run"


class ValidationRecord(BaseModel):
    """One check by the orchestrator: which leaves were unfilled, and what came back."""

    stage: str
    attempt: int
    unfilled: list[str]
    refilled: list[str] = Field(default_factory=list)


class RefinementRecord(BaseModel):
    round: int
    commands: list[str]
    human_feedback: list[str] = Field(default_factory=list)
    revised_sections: list[str] = Field(default_factory=list)


class RunLog(BaseModel):
    started_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    finished_at: datetime | None = None
    brief: str = ""
    template: str = ""
    mode: str = ""
    rounds: int = 0
    agents: dict[str, dict[str, object]] = Field(
        default_factory=dict, description="Model, temperature and max_tokens per agent."
    )
    elicitation: ElicitationRecord = Field(default_factory=ElicitationRecord)
    validations: list[ValidationRecord] = Field(default_factory=list)
    refinements: list[RefinementRecord] = Field(default_factory=list)
    notes: list[str] = Field(
        default_factory=list, description="Fallbacks the run took, in plain words."
    )
    unresolved_sections: list[str] = Field(
        default_factory=list,
        description="Leaves still empty after every correction; written as 'Not specified.' "
        "by the orchestrator, not by the generator.",
    )
    steps: list[AgentStep] = Field(default_factory=list)
    per_agent: dict[str, Totals] = Field(default_factory=dict)
    run: Totals = Field(default_factory=Totals)

    def record(
        self,
        *,
        agent: AgentName,
        purpose: str,
        round_: int,
        model: str,
        temperature: float,
        max_tokens: int,
        messages: list[Message],
        output: str,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        cached_tokens: int = 0,
        cost_usd: float = 0.0,
        seconds: float = 0.0,
        n_calls: int = 1,
        error: str | None = None,
    ) -> AgentStep:
        step = AgentStep(
            index=len(self.steps),
            agent=agent,
            purpose=purpose,
            round=round_,
            model=model,
            temperature=temperature,
            max_tokens=max_tokens,
            input=[LoggedMessage(role=m.role, content=m.content) for m in messages],
            output=output,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cached_tokens=cached_tokens,
            cost_usd=cost_usd,
            seconds=seconds,
            n_calls=n_calls,
            error=error,
        )
        self.steps.append(step)
        self.per_agent.setdefault(agent, Totals()).add(step)
        self.run.add(step)
        return step

    def steps_of(self, agent: AgentName) -> list[AgentStep]:
        return [step for step in self.steps if step.agent == agent]

    def finish(self) -> None:
        self.finished_at = datetime.now(UTC)

    def write(self, path: Path) -> None:
        path.write_text(self.model_dump_json(indent=2) + "\n", encoding="utf-8")
