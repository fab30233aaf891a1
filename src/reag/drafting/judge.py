"""LLM-as-judge grade of a generated SRS, 1 to 4, against a reference (Agent4RE 4.3 (3)).

The rubric grades ambiguity, completeness, consistency and correctness. The
paper trusts only frontier models with this; a grade from the local 270M base
model is mechanics, not a measurement, and the CLI says so.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from reag.drafting.agent import Agent
from reag.drafting.prompts import JUDGE_RUBRIC, JUDGE_SYSTEM
from reag.llm.base import LLMError, Message
from reag.untrusted import fence


class JudgeGrade(BaseModel):
    # Bounded so that the four findings and the grade fit the judge's output budget.
    ambiguity: str = Field(max_length=200)
    completeness: str = Field(max_length=200)
    consistency: str = Field(max_length=200)
    correctness: str = Field(max_length=200)
    grade: Literal[1, 2, 3, 4]


def _cut(text: str, limit: int) -> tuple[str, bool]:
    return (text, False) if len(text) <= limit else (text[:limit], True)


class SpecJudge(Agent):
    name = "judge"

    async def grade(self, generated: str, reference: str, max_chars: int) -> dict[str, Any]:
        """The grade with its rubric and findings, or the reason there is none."""
        gen, gen_cut = _cut(generated, max_chars)
        ref, ref_cut = _cut(reference, max_chars)
        messages = [
            Message("system", JUDGE_SYSTEM),
            Message(
                "user",
                f"{fence('untrusted_reference_srs', ref)}\n\n"
                f"{fence('untrusted_generated_srs', gen)}\n\n"
                "Grade the generated specification.",
            ),
        ]
        settings = {
            "model": self.client.model,
            "temperature": self.settings.temperature,
            "max_tokens": self.settings.max_tokens,
            "max_chars_per_document": max_chars,
            "generated_cut": gen_cut,
            "reference_cut": ref_cut,
        }
        out: dict[str, Any] = {"rubric": JUDGE_RUBRIC, "settings": settings}
        try:
            verdict = await self._structured("grade", messages, JudgeGrade)
        except LLMError as exc:
            out |= {"value": None, "error": f"the judge gave no grade: {exc}"}
            return out
        out |= {"value": verdict.grade, "findings": verdict.model_dump(exclude={"grade"})}
        return out
