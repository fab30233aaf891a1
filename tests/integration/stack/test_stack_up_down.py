"""`reag up` / `status` / `down` for real: every process starts, reports healthy, and stops.

Starts the whole embedded stack (Tansu, the local model server, the sample app
and all nine services) on free ports in a temporary state directory.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from shell.stack import supervisor
from shell.stack.ports import free_port, free_port_block

pytestmark = [pytest.mark.kafka, pytest.mark.llm, pytest.mark.slow]


def test_up_starts_every_process_healthy_and_down_stops_them(tmp_path: Path) -> None:
    from shell.kafka_io.topics import ensure_topics_at

    settings = supervisor.StackSettings(
        state_dir=tmp_path / "state",
        kafka_port=free_port(),
        model_port=free_port(),
        sample_app_port=free_port(),
        service_port_base=free_port_block(len(supervisor.service_names())),
    )
    lines: list[str] = []
    state = supervisor.up(settings, after_broker=ensure_topics_at, echo=lines.append)
    try:
        rows = supervisor.status(settings)
        assert [r.name for r in rows] == [p.name for p in state.processes]
        assert len(rows) == 3 + len(supervisor.service_names())
        assert all(r.alive and r.healthy for r in rows), rows
        with pytest.raises(supervisor.StackError, match="already running"):
            supervisor.up(settings)
    finally:
        stopped = supervisor.down(settings, echo=lines.append)
    assert stopped == len(state.processes)
    assert not any(supervisor.alive(p.pid) for p in state.processes)
    assert supervisor.status(settings) == []
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", settings.kafka_port)) != 0
