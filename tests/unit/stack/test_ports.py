"""Ports handed to servers that bind later lie below the ephemeral range and are never reused."""

from __future__ import annotations

import random
import socket
from pathlib import Path

import pytest

from shell.stack import ports


def test_ports_lie_below_the_ephemeral_range_and_are_handed_out_once() -> None:
    low = ports.ephemeral_low()
    handed = [ports.free_port() for _ in range(200)]
    assert all(20_000 <= p < low for p in handed)
    assert len(set(handed)) == len(handed)


def test_a_block_is_consecutive_free_and_overlaps_no_earlier_port() -> None:
    before = ports.free_port()
    base = ports.free_port_block(12)
    block = range(base, base + 12)
    assert before not in block
    assert all(ports.port_is_free(p) for p in block)
    assert ports.free_port_block(1) not in block


def test_a_port_bound_by_someone_else_is_not_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        taken: int = server.getsockname()[1]
        # Force every draw onto the taken port first, then onto a free one.
        draws = iter([taken, taken, taken + 1 if taken + 1 < 65_000 else taken - 1])

        class Fixed(random.Random):
            def randrange(self, *args: object, **kwargs: object) -> int:
                return next(draws)

        monkeypatch.setattr(ports, "ephemeral_low", lambda: 65_000)
        assert ports.free_port_block(1, rng=Fixed()) != taken


def test_an_unreadable_range_falls_back_to_linux_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ports, "_RANGE_FILE", Path("/nonexistent/ip_local_port_range"))
    assert ports.ephemeral_low() == 32_768
