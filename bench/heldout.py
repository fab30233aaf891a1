"""The held-out red-team set of issue 25: attacks, canaries and banking items, read in one place.

Why: a held-out set is only worth its name if every bench reads the same
files the same way; the defences of judge prompt v5 are designed on the
design set (examples/nutrition/redteam/attacks.yaml) and *reported* on this
one (examples/redteam-heldout/README.md says why nobody tunes on it).
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field

from bench.injection import Attack, load_attacks

ROOT = Path(__file__).resolve().parents[1]
HELDOUT = ROOT / "examples" / "redteam-heldout"
ATTACKS = HELDOUT / "attacks.yaml"
CANARIES = HELDOUT / "canaries.yaml"
BANKING_ITEMS = HELDOUT / "banking_items.jsonl"


class Canary(BaseModel):
    """A response that shows nothing (a master key, a null answer); it replaces a response whole."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1, pattern=r"^[a-z0-9-]+$")
    text: str = Field(description="The whole response; may be empty.")
    note: str = ""


class CanarySet(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int
    source: str
    about: str
    canaries: tuple[Canary, ...]


def heldout_attacks(path: Path = ATTACKS) -> tuple[Attack, ...]:
    """The held-out attacks and controls, in the design set's format."""
    return load_attacks(path)


def canaries(path: Path = CANARIES) -> tuple[Canary, ...]:
    """The canaries of ``path``; ids must be unique."""
    found = CanarySet.model_validate(yaml.safe_load(path.read_text(encoding="utf-8"))).canaries
    if len({c.id for c in found}) != len(found):
        raise ValueError(f"{path}: canary ids repeat")
    return found
