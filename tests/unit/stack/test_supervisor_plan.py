"""The embedded stack's plan: every service of the topology, each on its own port."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from services.kit.topology import SERVICES
from shell.stack import supervisor
from shell.stack.ports import port_is_free


def test_the_plan_runs_every_topology_service_once_with_distinct_ports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REAG_TIER_MODELS", "")  # three tiers on the LLM layer's default
    settings = supervisor.StackSettings(state_dir=tmp_path)
    specs = supervisor.plan(settings)
    names = [s.name for s in specs]
    assert names[:3] == ["broker", "model-server", "sample-app"]
    assert sorted(names[3:]) == sorted(SERVICES)
    assert len({s.port for s in specs}) == len(specs)
    tiers = {s.name: s.argv[-2:] for s in specs if s.name.startswith("judge-")}
    assert tiers == {f"judge-tier{n}": ["--tier", str(n)] for n in (1, 2, 3)}


def test_a_cascade_of_two_models_runs_two_judges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REAG_TIER_MODELS", "local:a,local:b")
    names = [s.name for s in supervisor.plan(supervisor.StackSettings(state_dir=tmp_path))]
    assert [n for n in names if n.startswith("judge-")] == ["judge-tier1", "judge-tier2"]


def test_a_listening_port_is_busy_and_a_closed_one_is_free() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert not port_is_free(port)
    assert port_is_free(port)


def test_status_and_down_without_a_stack_report_nothing(tmp_path: Path) -> None:
    settings = supervisor.StackSettings(state_dir=tmp_path)
    assert supervisor.status(settings) == []
    assert supervisor.down(settings, echo=lambda _m: None) == 0
