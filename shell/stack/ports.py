"""Free TCP ports for servers that another process binds later: below the ephemeral range.

Why not bind to port 0 and hand that out: the kernel picks such a port from
its ephemeral range, the range it also draws outgoing connections' source
ports from. Between choosing a port and the server binding it (a broker
start, a Python service importing its modules: seconds), any client
connection on the machine can take the port as its source port, and the
server fails with "address already in use" (seen in the chaos test: the
model server lost its port to one of the stack's own connections). A port
below the ephemeral range is never a source port, so it stays free unless
some server takes it on purpose.
"""

from __future__ import annotations

import random
import socket
import threading
from pathlib import Path

_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 20_000  # below the well-known services' usual ports on a developer machine
_DEFAULT_EPHEMERAL_LOW = 32_768  # Linux's default when the range cannot be read
_handed: set[int] = set()  # handed out by this process: never twice, even before binding
_lock = threading.Lock()


class NoFreePortError(RuntimeError):
    pass


def ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range."""
    try:
        return int(_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return _DEFAULT_EPHEMERAL_LOW


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server could bind ``port`` now. SO_REUSEADDR as the servers themselves set
    it: connections of a stack stopped a moment ago linger in TIME_WAIT and must not count."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port_block(n: int = 1, *, attempts: int = 500, rng: random.Random | None = None) -> int:
    """The first of ``n`` consecutive free ports, all below the ephemeral range."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    high = ephemeral_low() - n
    if high <= _LOWEST:
        raise NoFreePortError(f"the ephemeral range starts too low ({high + n}) for {n} ports")
    rng = rng or random.Random()
    with _lock:
        for _ in range(attempts):
            base = rng.randrange(_LOWEST, high)
            block = range(base, base + n)
            if any(p in _handed for p in block):
                continue
            if all(port_is_free(p) for p in block):
                _handed.update(block)
                return base
    raise NoFreePortError(f"no block of {n} free ports below {high + n}")


def free_port() -> int:
    """One free port below the ephemeral range, for a server that binds it later."""
    return free_port_block(1)
