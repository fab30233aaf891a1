"""Labelled case sets (``examples/<app>/cases.yaml``): what ``python -m bench cases`` replays.

A case is one request to an app with the app's actual response, and what a reviewer
decided about it: the expected outcome, the requirement documents that decide it
(must-check addresses ``<kind>/<id>`` of the app's corpus) and, for a FAIL, the kind of
failure and why. The files are written by hand (nutrition's is derived from its expert
labels) and committed before any reag stage runs on them, so the model below is the
only thing between a typo and a skewed benchmark: it refuses unknown fields, a FAIL
without kind and reason, a PASS with one, and duplicate ids.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Self

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

FailureKind = Literal[
    "out_of_scope_answered",
    "safety_escalation_missed",
    "secret_disclosed",
    "wrong_fact",
    "wrong_persona",
    "wrong_language_or_format",
    "legitimate_refused",
]

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
# The case sets, by app name, in the order the bench reports them.
CASE_FILES = {
    "nutrition": EXAMPLES / "nutrition" / "cases.yaml",
    "banking": EXAMPLES / "banking" / "cases.yaml",
    "home-energy": EXAMPLES / "home_energy" / "cases.yaml",
}
# Apps no prompt, method or default may be chosen on (issue 24): reported, never tuned.
HELD_OUT = frozenset({"home-energy"})


class CaseRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    query: str = Field(min_length=1)
    persona_hint: str | None = Field(default=None, description="A persona category id.")
    profile: str = ""
    context: str | None = Field(default=None, description="Extra input, e.g. a product label.")


class Case(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    request: CaseRequest
    response: str = Field(min_length=1)
    expected: Literal["PASS", "FAIL"]
    must_check: tuple[str, ...] = Field(min_length=1)
    kind: FailureKind | None = None
    reason: str | None = None
    items: tuple[str, ...] = Field(
        default=(), description="Calibration item ids this case was derived from (cross-fitting)."
    )

    @model_validator(mode="after")
    def _failure_fields(self) -> Self:
        failing = self.expected == "FAIL"
        if failing != (self.kind is not None) or failing != bool(self.reason):
            raise ValueError(f"{self.id}: a FAIL has a kind and a reason, a PASS neither")
        if len(set(self.must_check)) != len(self.must_check):
            raise ValueError(f"{self.id}: a must-check address is listed twice")
        return self


class CaseSet(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    app: str = Field(min_length=1)
    cases: tuple[Case, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> Self:
        ids = [c.id for c in self.cases]
        if len(set(ids)) != len(ids):
            raise ValueError(f"{self.app}: duplicate case ids")
        return self

    def fail_share(self) -> float:
        return sum(c.expected == "FAIL" for c in self.cases) / len(self.cases)


def load_case_set(path: Path) -> CaseSet:
    """A case set file, validated; raises ``pydantic.ValidationError`` on a bad one."""
    return CaseSet.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
