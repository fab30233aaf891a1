"""The oracle as the model must write it: the three parts of the paper's figure 2.

JSON keys follow the paper (``TestObjective``, ``ExpectedResultsDescription``,
``PassFailCriteria``); Python names are snake_case. Every string and the list
are bounded: a small local model decodes under this schema as a grammar and
must be able to reach the end, and a judge prompt has to hold each criterion.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

MAX_CRITERIA = 7
MAX_CRITERION_CHARS = 240

MIN_CRITERION_CHARS = 8

CriterionText = Annotated[
    str, StringConstraints(min_length=MIN_CRITERION_CHARS, max_length=MAX_CRITERION_CHARS)
]


# A second "PASS if" / "FAIL if" inside one criterion, with the list numbering a small
# model writes before it ("..., 14. PASS if ...").
_RUN_ON = re.compile(r"(?:[,;.]\s*(?:\d{1,2}[.)]\s*)?|\s+\d{1,2}[.)]\s*)(?=(?:PASS|FAIL) if\b)")


def _split_run_on(text: str) -> list[str]:
    """One criterion per "PASS if"/"FAIL if": a small model sometimes runs several into one
    string until the length cap cuts it (seen from the local 1.5B model: the same criterion
    repeated with ", 14.", ", 15." between). A split needs a separator before the second
    "PASS if", so a criterion that merely quotes the words stays whole; the piece the
    cap cut off (fewer than four words) is dropped, not judged.
    """
    pieces = [p.strip(" ,;") for p in _RUN_ON.split(text) if p.strip(" ,;")]
    if len(pieces) > 1 and len(pieces[-1].split()) < 4:
        pieces = pieces[:-1]
    return pieces


class OracleDraft(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    test_objective: str = Field(
        alias="TestObjective",
        min_length=10,
        max_length=300,
        description="The behaviour of the application this test checks, in one or two sentences.",
    )
    expected_results: str = Field(
        alias="ExpectedResultsDescription",
        min_length=20,
        max_length=800,
        description="What a correct response does for this user, given the requirements.",
    )
    criteria: list[CriterionText] = Field(
        alias="PassFailCriteria",
        min_length=1,
        max_length=MAX_CRITERIA,
        description=(
            "Checks that decide pass or fail, each one verifiable from the response text alone, "
            "starting with PASS if or FAIL if."
        ),
    )

    @field_validator("criteria", mode="before")
    @classmethod
    def _clean(cls, value: Any) -> Any:
        """Blank, too short and repeated criteria are dropped before the bounds are checked.

        One stray empty string should not cost a whole oracle; an oracle left with
        no criterion still fails ``min_length=1``.
        """
        if not isinstance(value, list):
            return value
        seen: dict[str, Any] = {}
        for raw in value:
            if not isinstance(raw, str):
                seen.setdefault(repr(raw), raw)  # let the type check reject it
                continue
            for text in _split_run_on(" ".join(raw.split())):
                if len(text) >= MIN_CRITERION_CHARS:
                    seen.setdefault(text.lower(), text)
        cleaned = list(seen.values())
        if len(value) <= MAX_CRITERIA < len(cleaned):
            cleaned = cleaned[:MAX_CRITERIA]  # the excess came from splitting run-ons
        return cleaned
