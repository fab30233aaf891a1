"""The oracle as the model must write it: the three parts of the paper's figure 2.

JSON keys follow the paper (``TestObjective``, ``ExpectedResultsDescription``,
``PassFailCriteria``); Python names are snake_case. Every string and the list
are bounded: a small local model decodes under this schema as a grammar and
must be able to reach the end, and a judge prompt has to hold each criterion.

A criterion is not free text but a constrained form (issue 24): the rule it
derives from, the documents that rule came from, what the rule is about, and
one claim about the response text, ``<verb> <object>`` with a verb from a
fixed list. Only claims a reader can check in the response text can be
written at all ("the response states / recommends / asks for / declines /
does not state ..."); the text the judge sees is rendered from the form
(``render``), so its wording never drifts. Checks that need the documents the
oracle saw (its citations, a rule's polarity, repeats, criteria about things
the text cannot show) are in ``reag.oracle.checks``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

MAX_CRITERIA = 7
MAX_CRITERION_CHARS = 240
MAX_SOURCES = 2
"""Documents one criterion may cite (the bench counts at most 2 per criterion)."""

Verb = Literal[
    "states",
    "recommends",
    "asks_for",
    "warns_about",
    "refers_the_user_to",
    "declines",
    "does_not_state",
    "does_not_recommend",
    "does_not_ask_for",
]
"""What the response does with the object: each decidable by reading the response."""

NEGATIVE_VERBS: frozenset[str] = frozenset(
    {"declines", "does_not_state", "does_not_recommend", "does_not_ask_for"}
)
"""Verbs that say the response holds something back: the polarity of a forbidding rule."""

NEGATION: dict[str, str] = {
    "states": "does_not_state",
    "recommends": "does_not_recommend",
    "asks_for": "does_not_ask_for",
}
"""The negative verb of each positive verb that has one."""

Concern = Literal[
    "scope", "safety", "security", "correctness", "persona_fit", "language_or_format", "style"
]
"""What the rule is about, in the order criteria are checked: scope, safety and
security before the rest, style last."""

CONCERN_ORDER: tuple[str, ...] = (
    "scope",
    "safety",
    "security",
    "correctness",
    "persona_fit",
    "language_or_format",
    "style",
)

MAX_OBJECT_CHARS = 140
ObjectText = Annotated[str, StringConstraints(min_length=3, max_length=MAX_OBJECT_CHARS)]
RuleText = Annotated[str, StringConstraints(min_length=3, max_length=200)]
SourceId = Annotated[str, StringConstraints(min_length=1, max_length=80)]


class CriterionForm(BaseModel):
    """One check: the rule it comes from, and one claim about the response text."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    concern: Concern = Field(description="What the rule is about.")
    rule: RuleText = Field(
        description="The requirement sentence this criterion derives from, quoted from a document."
    )
    sources: list[SourceId] = Field(
        min_length=1,
        max_length=MAX_SOURCES,
        description="The ids (in square brackets above) of the documents the rule comes from.",
    )
    verb: Verb = Field(description="What the response does with the object.")
    object: ObjectText = Field(
        description="What the response states, recommends, asks for, declines or holds back."
    )

    def render(self) -> str:
        """The criterion as the judge reads it: "PASS if the response <verb> <object>."."""
        return render(self.verb, self.object)


def render(verb: str, obj: str) -> str:
    phrase = verb.replace("_", " ")
    text = " ".join(obj.split()).rstrip(" .")
    for prefix in ("the response ", "that the response "):
        if text.lower().startswith(prefix):
            text = text[len(prefix) :]
    return f"PASS if the response {phrase} {text}."[:MAX_CRITERION_CHARS]


def render_raw(raw: Any) -> str | None:
    """A criterion of the model's raw JSON as text, before any check; None if it has no claim.

    For the bench's fixed checkers, which count on what the model wrote.
    """
    if isinstance(raw, str):
        return raw
    if isinstance(raw, dict) and isinstance(raw.get("verb"), str):
        return render(raw["verb"], str(raw.get("object", "")))
    return None


class OracleDraft(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    test_objective: str = Field(
        alias="TestObjective",
        min_length=10,
        max_length=300,
        description="The behaviour of the application this test checks, in one or two sentences.",
    )
    in_scope: bool = Field(
        alias="RequestInScope",
        description="Whether the application's documents say it should answer this request.",
    )
    expected_results: str = Field(
        alias="ExpectedResultsDescription",
        min_length=20,
        max_length=800,
        description="What a correct response does for this user, given the requirements.",
    )
    criteria: list[CriterionForm] = Field(
        alias="PassFailCriteria",
        min_length=1,
        max_length=MAX_CRITERIA,
        description="Checks that decide pass or fail, each a claim about the response text.",
    )

    @field_validator("criteria", mode="before")
    @classmethod
    def _cap(cls, value: Any) -> Any:
        """A list longer than the cap keeps its first criteria rather than costing the oracle."""
        if isinstance(value, list) and len(value) > MAX_CRITERIA:
            return value[:MAX_CRITERIA]
        return value
