"""The elicitation loop: interviewer ↔ stakeholder, ended by the interviewer's exit tool.

Agent4RE eq. (1): the interviewer asks from the previous question, its answer
and the project summary; the stakeholder answers from the question and the
summary alone. The interviewer ends the loop by calling its exit tool, and a
loop counter stops it at ``max_turns`` (10 in the paper). Then the interviewer
summarises the transcript into the elicitation report (eq. 2).

Our default local model has no native tool calling, so the exit tool is a
structured output: ``{"action": "ask", "question": ...}`` or
``{"action": "exit_interview"}``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from reag.drafting.agent import Agent, RunContext
from reag.drafting.prompts import (
    INTERVIEWER_REPORT,
    INTERVIEWER_TURN,
    STAKEHOLDER_ANSWER,
)
from reag.drafting.settings import MAX_ELICITATION_TURNS, AgentSettings
from reag.llm.base import Message, StructuredOutputError
from reag.llm.client import LLMClient
from reag.untrusted import fence

StopReason = Literal["exit_tool", "max_turns", "interviewer_error"]


class InterviewerMove(BaseModel):
    """The interviewer's tool call: ask one more question, or exit the interview."""

    action: Literal["ask", "exit_interview"]
    # Bounded so that a schema-constrained decoder closes the JSON within the
    # interviewer's output budget.
    question: str = Field(default="", max_length=240)

    @model_validator(mode="after")
    def _ask_needs_question(self) -> InterviewerMove:
        if self.action == "ask" and not self.question.strip():
            raise ValueError('action "ask" needs a non-empty "question"')
        return self


@dataclass(frozen=True, slots=True)
class Exchange:
    question: str
    answer: str


@dataclass
class Elicitation:
    exchanges: list[Exchange] = field(default_factory=list)
    stop_reason: StopReason = "max_turns"
    report: str = ""

    @property
    def turns(self) -> int:
        return len(self.exchanges)


_ACTION_RE = re.compile(r'"action"\s*:\s*"(ask|exit_interview)"')
_QUESTION_RE = re.compile(r'"question"\s*:\s*"((?:[^"\\\n]|\\.)*)')


def recover_move(raw: str) -> InterviewerMove | None:
    """The tool call inside a reply that is not valid JSON (cut off, or with text around it).

    Small models often get the call right and the JSON wrong; reading the two
    fields directly keeps the loop going, and the run log keeps the failed call.
    """
    action = _ACTION_RE.search(raw)
    if action is None:
        return None
    if action.group(1) == "exit_interview":
        return InterviewerMove(action="exit_interview")
    question = _QUESTION_RE.search(raw)
    if question is None:
        return None
    try:
        text = json.loads(f'"{question.group(1)}"')
    except json.JSONDecodeError:
        text = question.group(1)
    text = str(text).strip()[:240]
    return InterviewerMove(action="ask", question=text) if text else None


def transcript(exchanges: list[Exchange]) -> str:
    return "\n\n".join(
        f"Q{i}: {ex.question}\nA{i}: {ex.answer}" for i, ex in enumerate(exchanges, start=1)
    )


class Interviewer(Agent):
    name = "interviewer"

    def __init__(
        self,
        client: LLMClient,
        settings: AgentSettings,
        context: RunContext | None = None,
        report_settings: AgentSettings | None = None,
    ) -> None:
        super().__init__(client, settings, context)
        self.report_settings = report_settings or settings

    async def next_move(
        self,
        summary: str,
        last: Exchange | None,
        earlier_questions: list[str],
        turn: int,
        max_turns: int,
    ) -> InterviewerMove:
        parts = [fence("untrusted_project_summary", summary)]
        if last is not None:
            parts.append(fence("untrusted_previous_question", last.question))
            parts.append(fence("untrusted_previous_answer", last.answer))
        if earlier_questions:
            parts.append(
                fence("untrusted_questions_asked", "\n".join(f"- {q}" for q in earlier_questions))
            )
        parts.append(
            f"This is turn {turn} of at most {max_turns}. Ask your next question, "
            "or exit the interview."
        )
        messages = [Message("system", INTERVIEWER_TURN), Message("user", "\n\n".join(parts))]
        return await self._structured(f"turn {turn}", messages, InterviewerMove)

    async def write_report(self, summary: str, exchanges: list[Exchange]) -> str:
        body = transcript(exchanges) if exchanges else "(No questions were asked.)"
        messages = [
            Message("system", INTERVIEWER_REPORT),
            Message(
                "user",
                f"{fence('untrusted_project_summary', summary)}\n\n"
                f"{fence('untrusted_interview', body)}\n\n"
                "Write the elicitation report.",
            ),
        ]
        return await self._chat("elicitation report", messages, self.report_settings)


class Stakeholder(Agent):
    name = "stakeholder"

    async def answer(self, question: str, summary: str, turn: int) -> str:
        messages = [
            Message("system", STAKEHOLDER_ANSWER),
            Message(
                "user",
                f"{fence('untrusted_project_summary', summary)}\n\n"
                f"{fence('untrusted_question', question)}\n\n"
                "Answer the question.",
            ),
        ]
        return (await self._chat(f"answer {turn}", messages)).strip()


async def run_elicitation(
    interviewer: Interviewer,
    stakeholder: Stakeholder,
    summary: str,
    max_turns: int = MAX_ELICITATION_TURNS,
) -> Elicitation:
    """Question and answer until the exit tool or ``max_turns``; then the report.

    An interviewer reply that does not parse even after the client's repair
    attempt is read leniently (``recover_move``); if no tool call can be found
    in it, the loop ends (``stop_reason="interviewer_error"``). Either way the
    failed call is in the run log, and the exchanges so far make the report.
    """
    if not 1 <= max_turns <= MAX_ELICITATION_TURNS:
        raise ValueError(f"max_turns must be between 1 and {MAX_ELICITATION_TURNS}")
    result = Elicitation()
    for turn in range(1, max_turns + 1):
        last = result.exchanges[-1] if result.exchanges else None
        earlier = [ex.question for ex in result.exchanges[:-1]]
        try:
            move = await interviewer.next_move(summary, last, earlier, turn, max_turns)
        except StructuredOutputError as exc:
            recovered = recover_move(exc.raw)
            if recovered is None:
                result.stop_reason = "interviewer_error"
                break
            interviewer.context.log.notes.append(
                f"Elicitation turn {turn}: the interviewer's reply was not valid JSON; its "
                f"tool call ({recovered.action}) was read from the raw text."
            )
            move = recovered
        if move.action == "exit_interview":
            result.stop_reason = "exit_tool"
            break
        question = move.question.strip()
        answer = await stakeholder.answer(question, summary, turn)
        result.exchanges.append(Exchange(question, answer))
    else:
        result.stop_reason = "max_turns"
    result.report = (await interviewer.write_report(summary, result.exchanges)).strip()
    return result
