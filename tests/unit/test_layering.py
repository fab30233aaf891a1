"""The core library knows nothing of Kafka: only the shell (cli, stack) may reach services."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "src" / "reag"
SHELL = {"cli", "stack"}
FORBIDDEN = ("faststream", "aiokafka", "services")


def test_core_modules_import_no_kafka() -> None:
    offenders = []
    for path in CORE.rglob("*.py"):
        rel = path.relative_to(CORE)
        if rel.parts[0] in SHELL or rel.parts[0] == "v1":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{rel}: {n}" for n in names if n.split(".")[0] in FORBIDDEN]
    assert not offenders, offenders
