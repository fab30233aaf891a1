"""judge-tier1..3 as deployables: one definition per tier, read by the chart and by `reag up`.

Each ``services/judge-tier<N>/`` holds the tier's tier.yaml (entry point,
topics, consumer group, Deployment defaults) and its README. The chart reads
a checked copy of each file; ``reag up`` reads the file itself. These tests
fail when the folders, the rendered Deployments and the stack's process list
stop agreeing, or when a tier file disagrees with the judge's own wiring.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from services.judge.main import settings_from_argv
from services.judge.settings import JudgeSettings
from services.judge.tiers import SERVICES_DIR, TierDefinition, load_tier, load_tiers, tier_file
from services.kit.topology import JUDGE_TIER, SERVICES
from shell.stack import supervisor

REPO = Path(__file__).resolve().parents[3]
CHART_TIERS = REPO / "deploy" / "helm" / "reag" / "tiers"
Manifest = dict[str, Any]
Render = Callable[..., list[Manifest]]


def judge_deployments(manifests: list[Manifest]) -> dict[str, Manifest]:
    return {
        m["metadata"]["labels"]["app.kubernetes.io/component"]: m
        for m in manifests
        if m["kind"] == "Deployment"
        and m["metadata"]["labels"]["app.kubernetes.io/component"].startswith("judge-tier")
    }


def the_container(deployment: Manifest) -> Manifest:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    result: Manifest = container
    return result


def stack_judges(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, models: str | None
) -> dict[str, supervisor.ProcessSpec]:
    if models is None:
        monkeypatch.delenv("REAG_TIER_MODELS", raising=False)
    else:
        monkeypatch.setenv("REAG_TIER_MODELS", models)
    specs = supervisor.plan(supervisor.StackSettings(state_dir=tmp_path))
    return {s.name: s for s in specs if s.name.startswith("judge-tier")}


def test_each_tier_has_a_folder_with_its_definition_and_readme() -> None:
    folders = sorted(p.name for p in SERVICES_DIR.glob("judge-tier*") if p.is_dir())
    assert folders == [f"judge-tier{n}" for n in JUDGE_TIER]
    for tier in load_tiers():
        folder = tier_file(tier.tier).parent
        assert not (folder / "__init__.py").exists(), "a tier is configuration, not code"
        readme = (folder / "README.md").read_text()
        assert tier.service in readme
        assert " ".join(tier.command) in readme, "the README shows how the tier starts"


def test_tier_files_agree_with_the_topology_and_the_judges_own_wiring(
    judge_subscriptions: dict[str, tuple[str, str]],
) -> None:
    for tier in load_tiers():
        assert tier.service in SERVICES
        assert tier.consumes == JUDGE_TIER[tier.tier]
        assert tier.publishes == SERVICES[tier.service].produces
        assert (tier.consumes, tier.consumer_group) == judge_subscriptions[tier.service]


def test_each_entry_point_starts_the_judge_of_its_tier(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REAG_TIER_MODELS", "")  # three tiers, so every tier may start
    monkeypatch.setenv("REAG_TIER", "3")  # the command line wins over the environment
    for tier in load_tiers():
        python, flag, module, *args = tier.command
        assert (python, flag) == ("python", "-m")
        assert importlib.util.find_spec(f"{module}.__main__") is not None
        settings = settings_from_argv(args)
        assert isinstance(settings, JudgeSettings)
        assert settings.tier == tier.tier
        assert settings.service == tier.service


def test_an_entry_point_past_the_configured_cascade_refuses_to_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REAG_TIER_MODELS", "local:a")
    with pytest.raises(ValueError, match="not in the cascade"):
        settings_from_argv(list(load_tier(2).command[3:]))


def test_a_tier_file_that_names_another_tier_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from services.judge import tiers

    (tmp_path / "judge-tier1").mkdir()
    (tmp_path / "judge-tier1" / "tier.yaml").write_text(
        tier_file(2).read_text()  # tier 2's file in tier 1's folder
    )
    monkeypatch.setattr(tiers, "SERVICES_DIR", tmp_path)
    tiers.load_tier.cache_clear()
    try:
        with pytest.raises(tiers.TierDefinitionError, match="not judge-tier1"):
            tiers.load_tier(1)
    finally:
        monkeypatch.undo()
        tiers.load_tier.cache_clear()


def test_the_chart_holds_an_exact_copy_of_each_tier_file() -> None:
    copies = sorted(p.name for p in CHART_TIERS.iterdir())
    assert copies == [f"judge-tier{n}.yaml" for n in JUDGE_TIER]
    for n in JUDGE_TIER:
        assert (CHART_TIERS / f"judge-tier{n}.yaml").read_bytes() == tier_file(n).read_bytes(), (
            f"deploy/helm/reag/tiers/judge-tier{n}.yaml differs from "
            f"services/judge-tier{n}/tier.yaml: run `make tiers`"
        )


def _assert_deployment_is(tier: TierDefinition, deployment: Manifest) -> None:
    container = the_container(deployment)
    assert container["command"] == list(tier.command)
    assert container["image"].endswith(f"-{tier.deployment.floor}")
    assert container["resources"] == tier.deployment.resources
    assert deployment["spec"]["replicas"] == tier.deployment.replicas
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["REAG_TIER"] == str(tier.tier)


@pytest.mark.slow
def test_the_folders_the_chart_and_reag_up_run_the_same_tiers(
    rendered: list[Manifest], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """One definition per tier: the chart's Deployments and the stack's processes are it."""
    tiers = {t.service: t for t in load_tiers()}
    deployments = judge_deployments(rendered)  # the chart's default: three tiers
    processes = stack_judges(monkeypatch, tmp_path, "")  # reag up with three tiers
    assert set(deployments) == set(processes) == set(tiers)
    for name, tier in tiers.items():
        _assert_deployment_is(tier, deployments[name])
        assert processes[name].argv == [sys.executable, *tier.command[1:]]
        assert the_container(deployments[name])["command"][1:] == processes[name].argv[1:]


@pytest.mark.slow
@pytest.mark.parametrize("models", [["a"], ["a", "b"]])
def test_the_chart_renders_one_judge_per_configured_tier(
    render: Render, models: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    manifests = render(f"cascade.tierModels={{{','.join(models)}}}")
    deployments = judge_deployments(manifests)
    expected = [t.service for t in load_tiers(len(models))]
    assert sorted(deployments) == expected
    assert sorted(stack_judges(monkeypatch, tmp_path, ",".join(models))) == expected


def test_reag_up_runs_the_embedded_cascade_of_one_tier(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    processes = stack_judges(monkeypatch, tmp_path, None)
    (tier,) = load_tiers(1)
    assert list(processes) == [tier.service]
    assert processes[tier.service].argv == tier.argv(sys.executable)


@pytest.mark.slow
def test_values_override_a_tier_files_defaults_key_by_key(render: Render) -> None:
    manifests = render(
        "components.judge-tier2.replicas=4",
        "components.judge-tier2.floor=services",
        "components.judge-tier3.autoscaling.enabled=true",
    )
    deployments = judge_deployments(manifests)
    tier2 = the_container(deployments["judge-tier2"])
    assert deployments["judge-tier2"]["spec"]["replicas"] == 4
    assert tier2["image"].endswith("-services")
    assert tier2["resources"] == load_tier(2).deployment.resources  # not overridden: the file's
    (scaled,) = [m for m in manifests if m["kind"] == "ScaledObject"]
    (trigger,) = scaled["spec"]["triggers"]
    tier3 = load_tier(3)
    assert trigger["metadata"]["topic"] == tier3.consumes
    assert trigger["metadata"]["consumerGroup"] == tier3.consumer_group
    assert scaled["spec"]["maxReplicaCount"] == tier3.deployment.autoscaling.max_replicas
    _assert_deployment_is(load_tier(1), deployments["judge-tier1"])
