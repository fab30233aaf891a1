"""The chart's values and schema agree with the code: the topology, the settings' choices."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any, get_args

import yaml

from services.judge.tiers import load_tier, load_tiers
from services.kit.settings import SaslMechanism, SecurityProtocol
from services.kit.topology import SERVICES

CHART = Path(__file__).resolve().parents[3] / "deploy" / "helm" / "reag"
VALUES: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
SCHEMA: dict[str, Any] = json.loads((CHART / "values.schema.json").read_text())


def test_components_are_exactly_the_topologys_services() -> None:
    assert set(VALUES["components"]) == set(SERVICES)
    assert set(SCHEMA["properties"]["components"]["properties"]) == set(SERVICES)
    assert SCHEMA["properties"]["components"]["additionalProperties"] is False


def test_every_component_module_exists() -> None:
    for name, component in VALUES["components"].items():
        tier = name.removeprefix("judge-tier")
        module = component["module"] if tier == name else load_tier(int(tier)).command[2]
        assert importlib.util.find_spec(module) is not None, name


def test_judge_tiers_take_their_definition_from_their_tier_files() -> None:
    """values.yaml only switches a tier on: what it runs is services/judge-tier<N>/tier.yaml's."""
    judges = {n: c for n, c in VALUES["components"].items() if n.startswith("judge-tier")}
    assert set(judges) == {t.service for t in load_tiers()}
    for name, component in judges.items():
        assert component == {"enabled": True}, name


def test_autoscaling_watches_the_topic_and_group_each_tier_consumes_with(
    judge_subscriptions: dict[str, tuple[str, str]],
) -> None:
    tiers = {t.service: t for t in load_tiers()}
    assert set(tiers) == set(judge_subscriptions)
    for name, tier in tiers.items():
        assert tier.deployment.autoscaling.enabled is False, "autoscaling is opt-in"
        assert (tier.consumes, tier.consumer_group) == judge_subscriptions[name]
        assert tier.consumes in SERVICES[name].consumes
    assert not [n for n, c in VALUES["components"].items() if "autoscaling" in c]


def test_schema_choices_are_the_settings_choices() -> None:
    kafka = SCHEMA["properties"]["kafka"]["properties"]
    assert kafka["securityProtocol"]["enum"] == list(get_args(SecurityProtocol))
    assert kafka["saslMechanism"]["enum"] == list(get_args(SaslMechanism))
    assert VALUES["kafka"]["securityProtocol"] in get_args(SecurityProtocol)


def test_objects_in_the_schema_reject_unknown_keys() -> None:
    """Every object the chart reads field by field closes its key set."""
    open_ok = {"global", "config", "affinity", "tolerations"}
    for name, prop in SCHEMA["properties"].items():
        if prop.get("type") == "object" and name not in open_ok:
            assert prop.get("additionalProperties") is False, name
    for name in ("component", "judgeComponent", "autoscaling", "probe", "resources"):
        assert SCHEMA["definitions"][name]["additionalProperties"] is False, name
