"""reag is one house with three floors, and nothing imports from a floor above it.

- core (``src/reag``): the domain as a plain library. No Kafka client, no
  services, no shell.
- services (``services/``): thin FastStream apps over the core.
- shell (``shell/``): the CLI, the embedded stack, the demo and the Kafka I/O
  that only commands need. It may import everything below it.

Beside the services, on the same floor, sits the client (``src/reag/client``):
the recorder a production app imports to send its traffic. It needs a Kafka
producer, so it is not core, but it must install without the services: it
imports the core and aiokafka only, and nothing in the core or the services
imports it. Every import is checked, including the ones deferred inside
functions. ``bench/`` and ``tests/`` stand outside the house.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KAFKA = ("faststream", "aiokafka")
# What each floor may not import: top-level names, and our own floors above it.
FLOORS = ("core", "client", "services", "shell")
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "core": ("faststream", "aiokafka", "services", "shell", "reag.client"),
    "client": ("faststream", "services", "shell"),
    "services": ("shell", "reag.client"),
    "shell": (),
}
GENERATED = ("reag.v1",)  # protobuf stubs: they import only protobuf and grpc


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[0] == "src":
        parts = parts[1:]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _floor(module: str) -> str:
    if module == "reag.client" or module.startswith("reag.client."):
        return "client"
    top = module.split(".", maxsplit=1)[0]
    return {"reag": "core", "services": "services", "shell": "shell"}[top]


def _python_files() -> Iterator[Path]:
    for top in ("src/reag", "services", "shell"):
        yield from sorted((ROOT / top).rglob("*.py"))


def _known_modules() -> set[str]:
    return {_module_name(p) for p in _python_files()}


def _imports(path: Path, known: set[str]) -> Iterator[tuple[int, str]]:
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    yield from _imports_in(path.read_text(), package, known)


def _imports_in(source: str, package: str, known: set[str]) -> Iterator[tuple[int, str]]:
    """Every module the source imports, as a dotted name; ``from pkg import mod`` names pkg.mod,
    and relative imports are resolved against ``package``."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                yield node.lineno, candidate if candidate in known else target


def _is_under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def test_each_floor_imports_nothing_from_a_floor_above_it() -> None:
    known = _known_modules()
    offenders = []
    for path in _python_files():
        floor = _floor(_module_name(path))
        for line, name in _imports(path, known):
            for banned in FORBIDDEN[floor]:
                if _is_under(name, banned):
                    offenders.append(f"{path.relative_to(ROOT)}:{line} ({floor}) imports {name}")
    assert not offenders, "\n".join(offenders)


# What ``pip install reag[client]`` adds to the core's own dependencies; the OpenTelemetry
# API is used when the app has it (trace context in headers), never its SDK.
CLIENT_EXTRA = ("aiokafka", "opentelemetry")
# Distributions whose import name is not their name with "-" as "_".
IMPORT_NAMES = {"protobuf": "google", "pyyaml": "yaml", "google-genai": "google"}


def _core_import_names() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = set()
    for requirement in project["dependencies"]:
        dist = requirement.split(";")[0].split("[")[0]
        for mark in "<>=!~ ":
            dist = dist.split(mark)[0]
        dist = dist.strip().lower()
        names.add(IMPORT_NAMES.get(dist, dist.replace("-", "_")))
    return names


def _closure(start: set[str], known: set[str]) -> tuple[set[str], set[str]]:
    """Our modules reached from ``start`` (their packages included) and the outside names
    they import, deferred imports included."""
    paths = {_module_name(p): p for p in _python_files()}
    seen: set[str] = set()
    outside: set[str] = set()
    todo = list(start)
    while todo:
        module = todo.pop()
        if module in seen or module not in paths:
            continue
        seen.add(module)
        parts = module.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        for _line, name in _imports(paths[module], known):
            if name.split(".")[0] in ("reag", "services", "shell"):
                todo += [name, name.rpartition(".")[0]]
            else:
                outside.add(name)
    return seen, outside


def test_the_client_reaches_only_the_core_and_its_own_extra() -> None:
    """``reag.client`` and every module it pulls in, imports inside functions included, stay
    within the core's dependencies plus aiokafka (and the OpenTelemetry API when present)."""
    known = _known_modules()
    client = {m for m in known if _floor(m) == "client"}
    assert "reag.client" in client
    reached, outside = _closure(client, known)
    assert {_floor(m) for m in reached} <= {"core", "client"}
    allowed = _core_import_names() | set(CLIENT_EXTRA) | set(sys.stdlib_module_names)
    strays = sorted(n for n in outside if n.split(".")[0] not in allowed)
    assert not strays, f"reag.client reaches {strays}"
    assert not [n for n in outside if _is_under(n, "opentelemetry.sdk")]


def test_importing_the_client_loads_no_heavy_part() -> None:
    """The same promise at run time: what ``import reag.client`` actually loads."""
    heavy = ("faststream", "torch", "llama_cpp", "sentence_transformers", "services", "shell")
    code = f"import sys, reag.client\nprint(','.join(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == ""


def test_the_floors_are_the_tree() -> None:
    """Every Python file of the house is on exactly one floor; the shell is not in the core."""
    for path in _python_files():
        assert _floor(_module_name(path)) in FLOORS
    assert not (ROOT / "src/reag/cli").exists()
    assert not (ROOT / "src/reag/stack").exists()
    assert (ROOT / "shell/cli/main.py").is_file()


def _unit(module: str) -> str:
    """The package a module belongs to for the cycle test: ``reag.judging``, ``services.kit``,
    ``shell.cli``; a top-level module of a floor (``reag.apps``) is its own unit."""
    return ".".join(module.split(".")[:2])


def _package_graph() -> dict[str, set[str]]:
    known = _known_modules()
    units = {_unit(m) for m in known}
    graph: dict[str, set[str]] = defaultdict(set)
    for path in _python_files():
        source = _unit(_module_name(path))
        if source in GENERATED:
            continue
        for _line, name in _imports(path, known):
            target = _unit(name)
            if target in units and target != source and target not in GENERATED:
                graph[source].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one package (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles_between_packages() -> None:
    cycles = _cycles(_package_graph())
    assert not cycles, cycles


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"c"}}, []),
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ],
)
def test_the_cycle_finder_finds_cycles(
    graph: dict[str, set[str]], expected: list[list[str]]
) -> None:
    assert _cycles(graph) == expected


def test_the_import_reader_sees_deferred_relative_and_from_imports() -> None:
    """An import inside a function counts: that is where a Kafka client would hide."""
    source = (
        "import json\n"
        "def f():\n"
        "    from aiokafka import AIOKafkaProducer\n"
        "    from ..kit import broker\n"
        "    from reag import metrics\n"
    )
    known = {"services.kit.broker", "reag.metrics"}
    names = [name for _line, name in _imports_in(source, "services.judge", known)]
    assert names == ["json", "aiokafka", "services.kit.broker", "reag.metrics"]
