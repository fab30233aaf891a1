"""The judge tiers as deployables: ``services/judge-tier<N>/tier.yaml``, read once here.

The design card names three services, judge-tier1..3, over one judge code
path. Each has a folder beside this package (a hyphenated name, so not a
Python package) holding its definition: entry point, topics, consumer group
and Deployment defaults. The Helm chart (through a checked copy) and
``reag up`` both start tiers from these files, so a tier is defined once.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reag.judging.settings import N_TIERS

SERVICES_DIR = Path(__file__).resolve().parents[1]

Floor = Literal["services", "local", "embeddings"]


class TierDefinitionError(ValueError):
    """A tier's folder or its tier.yaml is missing or malformed; the message names the file."""


class Autoscaling(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    enabled: bool = Field(description="Scale on lag by default.")
    mode: Literal["keda", "hpa"] = Field(description="KEDA's Kafka trigger or an HPA.")
    min_replicas: int = Field(alias="minReplicas", ge=0, description="Fewest replicas.")
    max_replicas: int = Field(alias="maxReplicas", ge=1, description="Most replicas.")
    lag_threshold: int = Field(alias="lagThreshold", ge=1, description="Lag per replica.")


class Deployment(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    floor: Floor = Field(description="Which image (Dockerfile FLOOR) the tier runs.")
    replicas: int = Field(ge=0, description="Replicas when not autoscaled.")
    resources: dict[str, dict[str, str]] = Field(description="Kubernetes requests and limits.")
    autoscaling: Autoscaling = Field(description="Lag-based scaling defaults.")


class TierDefinition(BaseModel):
    """One tier as its tier.yaml states it (camelCase keys, as the chart reads them)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    tier: int = Field(ge=1, le=N_TIERS, description="Place in the cascade.")
    service: str = Field(description="Service name, as in services.kit.topology.SERVICES.")
    command: tuple[str, ...] = Field(min_length=3, description="The entry point's argv.")
    consumes: str = Field(description="The topic its criteria arrive on.")
    consumer_group: str = Field(alias="consumerGroup", description="Its consumer group.")
    publishes: tuple[str, ...] = Field(description="Topics it writes, besides the DLQ.")
    deployment: Deployment = Field(description="Defaults of its Kubernetes Deployment.")

    def argv(self, python: str) -> list[str]:
        """The entry point run by ``python`` (the command names the image's ``python``)."""
        return [python, *self.command[1:]]


def tier_file(tier: int) -> Path:
    return SERVICES_DIR / f"judge-tier{tier}" / "tier.yaml"


def _read(path: Path) -> dict[str, Any]:
    try:
        raw = yaml.safe_load(path.read_text())
    except FileNotFoundError as exc:
        raise TierDefinitionError(
            f"{path} is missing: every judge tier is defined by its folder's tier.yaml"
        ) from exc
    if not isinstance(raw, dict):
        raise TierDefinitionError(f"{path} does not hold a mapping")
    return raw


@cache
def load_tier(tier: int) -> TierDefinition:
    """Tier ``tier``'s definition, checked: its file must say it is that tier."""
    path = tier_file(tier)
    try:
        definition = TierDefinition.model_validate(_read(path))
    except ValidationError as exc:
        raise TierDefinitionError(f"{path}: {exc}") from exc
    if definition.tier != tier or definition.service != f"judge-tier{tier}":
        raise TierDefinitionError(
            f"{path} defines tier {definition.tier} ({definition.service}), not judge-tier{tier}"
        )
    return definition


def load_tiers(n_tiers: int = N_TIERS) -> list[TierDefinition]:
    """The first ``n_tiers`` tiers, cheapest first: what a cascade of that depth runs."""
    return [load_tier(t) for t in range(1, n_tiers + 1)]
