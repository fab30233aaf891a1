"""The refactor agent: quality findings on a draft, as improvement commands (A_R(D_k, F_a, F_h)).

It reads the draft with the orchestrator's verification comments (agent
feedback F_a) and, in human-feedback mode, the reviewer's bullet points
(F_h), and answers with commands the generator applies section by section.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from reag.drafting.agent import Agent, RunContext
from reag.drafting.document import SrsDocument
from reag.drafting.prompts import REFACTOR_REVIEW
from reag.drafting.settings import AgentSettings
from reag.llm.base import Message, StructuredOutputError
from reag.llm.client import LLMClient
from reag.untrusted import fence

Quality = Literal["ambiguity", "completeness", "consistency", "verifiability"]
# Bounds keep a schema-constrained reply inside the refactor agent's output budget.
MAX_COMMANDS = 6


class ImprovementCommand(BaseModel):
    section: str = Field(max_length=40, description="Number of the section to change.")
    quality: Quality
    finding: str = Field(default="", max_length=160)
    command: str = Field(min_length=1, max_length=240)


class RefactorOutput(BaseModel):
    commands: list[ImprovementCommand] = Field(default_factory=list, max_length=MAX_COMMANDS)


def bullets(points: list[str]) -> str:
    return "\n".join(f"- {point}" for point in points)


def cut_at_line(text: str, max_chars: int) -> str:
    """``text`` whole if it fits, else its lines up to ``max_chars`` and a marker."""
    if len(text) <= max_chars:
        return text
    head = text[:max_chars].rsplit("\n", 1)[0]
    return f"{head}\n[... draft cut here: {len(text) - len(head)} more characters not shown]"


class Refactor(Agent):
    name = "refactor"

    def __init__(
        self,
        client: LLMClient,
        settings: AgentSettings,
        context: RunContext | None = None,
        max_draft_chars: int = 8000,
    ) -> None:
        super().__init__(client, settings, context)
        self.max_draft_chars = max_draft_chars

    def review_messages(
        self, document: SrsDocument, verification: list[str], human_feedback: list[str]
    ) -> list[Message]:
        parts = [
            fence("untrusted_draft_srs", cut_at_line(document.to_markdown(), self.max_draft_chars))
        ]
        if verification:
            parts.append(fence("untrusted_verification_comments", bullets(verification)))
        if human_feedback:
            parts.append(fence("untrusted_reviewer_feedback", bullets(human_feedback)))
        parts.append("List the improvement commands.")
        return [Message("system", REFACTOR_REVIEW), Message("user", "\n\n".join(parts))]

    async def review(
        self,
        document: SrsDocument,
        verification: list[str] | None = None,
        human_feedback: list[str] | None = None,
    ) -> list[ImprovementCommand]:
        """Commands for the generator; none when the output does not parse (the run log
        keeps the failed call), so a refinement round degrades to a no-op, not a crash."""
        messages = self.review_messages(document, verification or [], human_feedback or [])
        try:
            output = await self._structured("improvement commands", messages, RefactorOutput)
        except StructuredOutputError:
            return []
        return [c for c in output.commands if c.command.strip()]
