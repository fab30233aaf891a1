"""The oracle as the model must write it: the three parts of the paper's figure 2.

JSON keys follow the paper (``TestObjective``, ``ExpectedResultsDescription``,
``PassFailCriteria``); Python names are snake_case. Every string and the list
are bounded: a small local model decodes under this schema as a grammar and
must be able to reach the end, and a judge prompt has to hold each criterion.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

MAX_CRITERIA = 8
MAX_CRITERION_CHARS = 300

CriterionText = Annotated[str, StringConstraints(min_length=8, max_length=MAX_CRITERION_CHARS)]


class OracleDraft(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    test_objective: str = Field(
        alias="TestObjective", min_length=10, max_length=400,
        description="The behaviour of the application this test checks, in one or two sentences.",
    )
    expected_results: str = Field(
        alias="ExpectedResultsDescription", min_length=20, max_length=1200,
        description="What a correct response does for this user, given the requirements.",
    )
    criteria: list[CriterionText] = Field(
        alias="PassFailCriteria", min_length=1, max_length=MAX_CRITERIA,
        description=(
            "Checks that decide pass or fail, each one verifiable from the response text alone, "
            "starting with PASS if or FAIL if."
        ),
    )

    @field_validator("criteria", mode="after")
    @classmethod
    def _clean(cls, value: list[str]) -> list[str]:
        """Blank and repeated criteria are dropped; an oracle left with none is invalid."""
        seen: dict[str, str] = {}
        for raw in value:
            text = " ".join(raw.split())
            if len(text) < 8:
                continue
            seen.setdefault(text.lower(), text)
        if not seen:
            raise ValueError("the oracle has no usable pass/fail criteria")
        return list(seen.values())
