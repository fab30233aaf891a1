"""The decidability set of issue 25: criteria that the response text can, or cannot, show.

Why: a judge that says YES to "PASS if the app blocks the purchase" on a text
answer passes a case on something it never saw. The v5 judge abstains on
such criteria with reason ``undecidable``; this set, labelled blind to any
judge score, measures how well it tells them apart. This module only reads
the set; the bench that scores a judge on it joins with the v5 prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from reag.v1 import events_pb2 as pb

ROOT = Path(__file__).resolve().parents[1]
CRITERIA = ROOT / "examples" / "decidability" / "criteria.yaml"

Decidability = Literal["decidable", "undecidable"]


class DecidabilityItem(BaseModel):
    """One criterion with a response, and whether the response text can decide it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1, pattern=r"^[a-z0-9-]+$")
    app: Literal["nutrition", "banking"]
    criterion: str = Field(min_length=1)
    response: str = Field(min_length=1)
    query: str = ""
    decidability: Decidability
    why: str = Field(min_length=1, description="The rule of the README that decides the label.")

    def request(self) -> pb.JudgeRequest:
        """The item as a judge is asked it: the same request a live criterion makes."""
        request = pb.JudgeRequest(
            criterion=pb.Criterion(criterion_id=self.id, text=self.criterion),
            query=self.query,
            actual_response=self.response,
            n_criteria=1,
        )
        request.meta.case_id, request.meta.app = self.id, self.app
        request.meta.schema_version = pb.SCHEMA_VERSION_1
        return request


class DecidabilitySet(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int
    source: str
    about: str
    criteria: tuple[DecidabilityItem, ...]


def load_decidability(path: Path = CRITERIA) -> Sequence[DecidabilityItem]:
    """The labelled criteria of ``path``; ids must be unique."""
    found = DecidabilitySet.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    ids = [c.id for c in found.criteria]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: criterion ids repeat")
    return found.criteria
