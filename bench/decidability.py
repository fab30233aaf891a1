"""The decidability set of issue 25: criteria that the response text can, or cannot, show.

Why: a judge that says YES to "PASS if the app blocks the purchase" on a text
answer passes a case on something it never saw. The v5 judge abstains on
such criteria with reason ``undecidable``; this set, labelled blind to any
judge score, measures how well it tells them apart. This module only reads
the set; the bench that scores a judge on it joins with the v5 prompt.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from reag.decidability import undecidable
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


NUTRITION_LABELLED = ROOT / "examples" / "nutrition" / "calibration.jsonl"


@dataclass(frozen=True)
class GuardScore:
    """The judge's ``undecidable`` guard (``reag.decidability``) against the labels."""

    true_pos: int
    false_pos: int
    false_neg: int
    true_neg: int
    clean_flagged: int
    clean_total: int

    @property
    def precision(self) -> float:
        flagged = self.true_pos + self.false_pos
        return self.true_pos / flagged if flagged else float("nan")

    @property
    def recall(self) -> float:
        positives = self.true_pos + self.false_neg
        return self.true_pos / positives if positives else float("nan")

    @property
    def clean_rate(self) -> float:
        return self.clean_flagged / self.clean_total if self.clean_total else float("nan")


def score_guard(items: Sequence[DecidabilityItem], clean_criteria: Sequence[str]) -> GuardScore:
    """Confusion counts of the fixed rule on ``items``, and its flags on criteria that
    are decidable by construction (the expert-labelled set). The rule is not tuned here."""
    tp = fp = fn = tn = 0
    for item in items:
        flagged = undecidable(item.criterion)
        actual = item.decidability == "undecidable"
        tp += flagged and actual
        fp += flagged and not actual
        fn += actual and not flagged
        tn += not flagged and not actual
    clean = sum(undecidable(c) for c in clean_criteria)
    return GuardScore(tp, fp, fn, tn, clean, len(clean_criteria))


def clean_criteria(path: Path = NUTRITION_LABELLED) -> list[str]:
    """The criteria of the expert-labelled nutrition items (decidable by construction)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["criterion"] for line in lines if line.strip()]


def run() -> None:
    s = score_guard(load_decidability(), clean_criteria())
    print(
        f"undecidable guard on {CRITERIA.relative_to(ROOT)}: "
        f"TP {s.true_pos} FP {s.false_pos} FN {s.false_neg} TN {s.true_neg}; "
        f"precision {s.precision:.3f}, recall {s.recall:.3f}"
    )
    print(
        f"flags {s.clean_flagged} of {s.clean_total} expert-labelled nutrition criteria "
        f"({s.clean_rate:.1%}); the guard is on by default only at <= 3 %"
    )
