"""The images' lock files match pyproject.toml, pin every package by hash, and fit their floor.

requirements/<floor>.lock is what the Dockerfile installs for that floor's image
(``--require-hashes``), compiled by scripts/lock.sh. Re-resolving here would
take minutes and the network; instead these tests read the lock files: every
direct dependency the floor's extras declare is locked at a version the
declaration allows, nothing the floor no longer declares is locked as direct,
and what a floor must leave out (torch, llama.cpp, CUDA) is not there.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import get_args

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from services.judge.tiers import Floor

ROOT = Path(__file__).resolve().parents[3]
LOCKS = ROOT / "requirements"
FLOORS = {
    "services": ("services",),
    "local": ("services", "local"),
    "embeddings": ("services", "local", "embeddings"),
}
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
SELF = "reag (pyproject.toml)"


@dataclass
class Locked:
    version: Version
    hashes: list[str] = field(default_factory=list)
    via: list[str] = field(default_factory=list)


def read_lock(floor: str) -> dict[str, Locked]:
    """name -> what the lock pins for it, its hashes, and what pulled it in."""
    locked: dict[str, Locked] = {}
    current: Locked | None = None
    in_via = False
    for line in (LOCKS / f"{floor}.lock").read_text().splitlines():
        pin = re.match(r"^([A-Za-z0-9._-]+)==(\S+)", line)
        if pin:
            current = locked[canonicalize_name(pin[1])] = Locked(Version(pin[2]))
            in_via = False
            continue
        text = line.strip()
        if current is None or not text:
            continue
        if text.startswith("--hash="):
            current.hashes.append(text.removeprefix("--hash=").rstrip(" \\"))
        elif text.startswith("# via"):
            rest = text.removeprefix("# via").strip()
            in_via = not rest
            if rest:
                current.via.append(rest)
        elif in_via and text.startswith("#   "):
            current.via.append(text.removeprefix("#   ").strip())
        else:
            in_via = False
    return locked


def declared(extras: tuple[str, ...]) -> dict[str, Requirement]:
    """The floor's direct requirements: the base plus its extras, ``reag[...]`` expanded."""
    out: dict[str, Requirement] = {}
    todo = [*PROJECT["dependencies"]]
    for extra in extras:
        todo += PROJECT["optional-dependencies"][extra]
    seen = set(extras)
    while todo:
        requirement = Requirement(todo.pop())
        name = canonicalize_name(requirement.name)
        if name == "reag":
            for extra in requirement.extras - seen:
                seen.add(extra)
                todo += PROJECT["optional-dependencies"][extra]
            continue
        if name in out:
            out[name].specifier &= requirement.specifier
        else:
            out[name] = requirement
    return out


@pytest.mark.parametrize("floor", sorted(FLOORS))
def test_every_declared_dependency_is_locked_within_its_bounds(floor: str) -> None:
    locked = read_lock(floor)
    for name, requirement in declared(FLOORS[floor]).items():
        assert name in locked, f"{name} is declared but not in {floor}.lock: run scripts/lock.sh"
        assert requirement.specifier.contains(locked[name].version, prereleases=True), (
            f"{floor}.lock pins {name}=={locked[name].version}, outside pyproject's "
            f"{requirement.specifier}: run scripts/lock.sh {floor}"
        )


@pytest.mark.parametrize("floor", sorted(FLOORS))
def test_nothing_is_locked_as_direct_that_the_floor_no_longer_declares(floor: str) -> None:
    direct = {name for name, pin in read_lock(floor).items() if SELF in pin.via}
    assert direct == set(declared(FLOORS[floor])), f"run scripts/lock.sh {floor}"


@pytest.mark.parametrize("floor", sorted(FLOORS))
def test_every_locked_package_carries_a_hash(floor: str) -> None:
    for name, pin in read_lock(floor).items():
        assert pin.hashes, name
        assert all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in pin.hashes), name


def test_each_floor_leaves_out_what_it_does_not_need() -> None:
    services, local, embeddings = (read_lock(f) for f in ("services", "local", "embeddings"))
    heavy = {"torch", "llama-cpp-python", "sentence-transformers", "transformers"}
    assert not set(services) & heavy, "the services image needs no model runtime"
    assert "llama-cpp-python" in local
    assert not set(local) & {"torch", "sentence-transformers", "transformers"}
    assert {"torch", "sentence-transformers"} <= set(embeddings)
    assert set(services) <= set(local) <= set(embeddings)
    for lock in (services, local, embeddings):
        assert not [n for n in lock if n.startswith(("nvidia-", "triton"))], "a CUDA build"


def test_torch_is_the_cpu_build_and_llama_cpp_the_built_version() -> None:
    embeddings, local = read_lock("embeddings"), read_lock("local")
    assert embeddings["torch"].version == Version("2.13.0+cpu")
    pins: dict[str, Requirement] = {
        canonicalize_name(r.name): r
        for line in (LOCKS / "pins.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
        for r in [Requirement(line)]
    }
    built = re.search(
        r"LLAMA_VERSION=\$\{REAG_LLAMA_CPP_VERSION:-([0-9.]+)\}",
        (ROOT / "scripts" / "install.sh").read_text(),
    )
    assert built is not None
    assert pins["llama-cpp-python"].specifier.contains(built[1])
    assert local["llama-cpp-python"].version == Version(built[1])
    assert embeddings["llama-cpp-python"].version == Version(built[1])


def test_the_floors_are_one_list_in_the_dockerfile_locks_chart_and_tiers() -> None:
    assert {p.stem for p in LOCKS.glob("*.lock")} == set(FLOORS) == set(get_args(Floor))
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "--require-hashes --no-deps" in dockerfile
    assert '-r "requirements/$FLOOR.lock"' in dockerfile
    for floor in FLOORS:
        header = (LOCKS / f"{floor}.lock").read_text()
        assert f"scripts/lock.sh {floor}\n" in header, "compiled by scripts/lock.sh"
    chart = ROOT / "deploy" / "helm" / "reag"
    schema = yaml.safe_load((chart / "values.schema.json").read_text())
    assert set(schema["definitions"]["componentProperties"]["floor"]["enum"]) == set(FLOORS)
    values = yaml.safe_load((chart / "values.yaml").read_text())
    assert values["components"]["ledger"]["floor"] == "services", "the ledger calls no model"
