"""Starts, stops and inspects the embedded stack: one process per component.

``reag up`` runs, on 127.0.0.1: the Tansu broker, the shared local model
server, the sample LLM app under test, and every service as its own
process, each logging to ``<state_dir>/logs/<name>.log``. What was started is
recorded in ``<state_dir>/stack.json`` so ``reag down`` and ``reag status``
work from any later shell. The services are the same code that runs on
Apache Kafka in production; only their environment differs.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pydantic import Field

from reag.settings import ReagSettings
from services.judge.tiers import load_tiers
from shell.stack.ports import port_is_free
from shell.stack.tansu import broker_command, wait_for_port


class StackError(RuntimeError):
    """The stack could not be started or stopped as asked; the message says what to do."""


class StackSettings(ReagSettings):
    kafka_port: int = Field(default=9092, description="Port of the embedded Tansu broker.")
    model_port: int = Field(default=18080, description="Port of the shared local model server.")
    sample_app_port: int = Field(default=18081, description="Port of the sample LLM app.")
    service_port_base: int = Field(
        default=18100, description="Services get /metrics and /healthz on consecutive ports."
    )
    app_manifest: Path = Field(
        default=Path("examples/nutrition/app.yaml"),
        description="The example app the sample app serves and the demo tests.",
    )
    start_timeout_s: float = Field(default=180.0, description="How long each start may take.")


@dataclass
class ProcessSpec:
    name: str
    argv: list[str]
    port: int
    health_path: str | None  # None: a TCP connect is the health check
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class ProcessRecord:
    name: str
    pid: int
    port: int
    health_path: str | None
    log: str
    argv: list[str]


@dataclass
class StackState:
    bootstrap: str
    model_url: str
    sample_app_url: str
    processes: list[ProcessRecord]
    started_at: float

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, path: Path) -> StackState:
        raw = json.loads(path.read_text())
        raw["processes"] = [ProcessRecord(**p) for p in raw["processes"]]
        return cls(**raw)


def _n_tiers() -> int:
    from reag.judging.settings import CascadeSettings

    return CascadeSettings().n_tiers


def service_names() -> tuple[str, ...]:
    """The stack's services: one judge per tier of the configured cascade (REAG_TIER_MODELS)."""
    return (
        "elicitor",
        "retriever",
        "oracle",
        *(t.service for t in load_tiers(_n_tiers())),
        "ledger",
        "calibrator",
    )


def _python_module(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


def plan(settings: StackSettings) -> list[ProcessSpec]:
    """Every process of the stack in start order, with its arguments and environment."""
    specs = [
        ProcessSpec("broker", broker_command(settings.kafka_port), settings.kafka_port, None),
        ProcessSpec(
            "model-server",
            _python_module(
                "shell.cli.main",
                "llm",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(settings.model_port),
            ),
            settings.model_port,
            "/healthz",
        ),
        ProcessSpec(
            "sample-app",
            _python_module(
                "shell.cli.main",
                "sample-app",
                "serve",
                "--app-manifest",
                str(settings.app_manifest.resolve()),
                "--port",
                str(settings.sample_app_port),
            ),
            settings.sample_app_port,
            None,
        ),
    ]
    tiers = {t.service: t for t in load_tiers(_n_tiers())}
    for offset, name in enumerate(service_names()):
        # A judge tier starts as its folder says (services/judge-tier<N>/tier.yaml).
        tier = tiers.get(name)
        argv = tier.argv(sys.executable) if tier else _python_module(f"services.{name}")
        port = settings.service_port_base + offset
        specs.append(ProcessSpec(name, argv, port, "/healthz"))
    return specs


def _shared_env(settings: StackSettings) -> dict[str, str]:
    state_dir = settings.state_dir.resolve()
    return {
        "REAG_STATE_DIR": str(state_dir),
        "REAG_KAFKA__BOOTSTRAP_SERVERS": f"127.0.0.1:{settings.kafka_port}",
        "REAG_LLM_LOCAL_URL": f"http://127.0.0.1:{settings.model_port}",
        "PYTHONUNBUFFERED": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }


def healthy(record: ProcessRecord | ProcessSpec, timeout_s: float = 2.0) -> bool:
    if record.health_path is None:
        try:
            wait_for_port("127.0.0.1", record.port, timeout_s=timeout_s)
        except RuntimeError:
            return False
        return True
    url = f"http://127.0.0.1:{record.port}{record.health_path}"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return 200 <= int(response.status) < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def state_path(settings: ReagSettings) -> Path:
    return settings.state_dir / "stack.json"


def up(
    settings: StackSettings,
    *,
    after_broker: Callable[[str], int] | None = None,
    echo: Callable[[str], None] = print,
) -> StackState:
    """Start every process; return once all report healthy, or stop them all and raise."""
    path = state_path(settings)
    if path.exists():
        previous = StackState.load(path)
        if any(alive(p.pid) for p in previous.processes):
            raise StackError(f"a stack is already running (see {path}); `reag down` stops it first")
    specs = plan(settings)
    busy = [s for s in specs if not port_is_free(s.port)]
    if busy:
        names = ", ".join(f"{s.name} ({s.port})" for s in busy)
        raise StackError(
            f"ports already in use: {names}; stop what holds them or set "
            "REAG_KAFKA_PORT / REAG_MODEL_PORT / REAG_SAMPLE_APP_PORT / REAG_SERVICE_PORT_BASE"
        )
    logs = settings.state_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    base_env = {**os.environ, **_shared_env(settings)}
    records: list[ProcessRecord] = []
    state = StackState(
        bootstrap=f"127.0.0.1:{settings.kafka_port}",
        model_url=f"http://127.0.0.1:{settings.model_port}",
        sample_app_url=f"http://127.0.0.1:{settings.sample_app_port}",
        processes=records,
        started_at=time.time(),
    )
    try:
        for spec in specs:
            log_path = logs / f"{spec.name}.log"
            with open(log_path, "ab") as log:
                proc = subprocess.Popen(
                    spec.argv,
                    env={**base_env, **spec.env, "REAG_HTTP_PORT": str(spec.port)},
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            records.append(
                ProcessRecord(
                    spec.name, proc.pid, spec.port, spec.health_path, str(log_path), spec.argv
                )
            )
            state.save(path)
            _wait_healthy(records[-1], proc, settings.start_timeout_s)
            echo(f"  {spec.name:<14} up   pid {proc.pid:<7} port {spec.port}")
            if spec.name == "broker" and after_broker is not None:
                created = after_broker(state.bootstrap)
                echo(f"  {'topics':<14} {created} created")
    except BaseException:
        down(settings, echo=lambda _m: None)
        raise
    return state


def _wait_healthy(record: ProcessRecord, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = Path(record.log).read_text(errors="replace")[-2000:]
            raise StackError(
                f"{record.name} exited with status {proc.returncode} while starting; "
                f"its log ({record.log}) ends with:\n{tail}"
            )
        if healthy(record, timeout_s=1.0):
            return
        time.sleep(0.3)
    raise StackError(f"{record.name} was not healthy after {timeout_s:.0f}s; see {record.log}")


def down(settings: ReagSettings, *, echo: Callable[[str], None] = print) -> int:
    """Stop every recorded process (services first, broker last); returns how many were alive."""
    path = state_path(settings)
    if not path.exists():
        return 0
    state = StackState.load(path)
    stopped = 0
    for record in reversed(state.processes):
        if not alive(record.pid):
            continue
        stopped += 1
        try:
            os.killpg(record.pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        deadline = time.monotonic() + 10
        while alive(record.pid) and time.monotonic() < deadline:
            _reap(record.pid)
            time.sleep(0.1)
        if alive(record.pid):
            os.killpg(record.pid, signal.SIGKILL)
            _reap(record.pid)
        echo(f"  {record.name:<14} stopped")
    path.unlink(missing_ok=True)
    return stopped


def _reap(pid: int) -> None:
    """Collect our own exited children so they do not linger as zombies."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


@dataclass
class ProcessStatus:
    name: str
    pid: int
    port: int
    alive: bool
    healthy: bool


def status(settings: ReagSettings) -> list[ProcessStatus]:
    path = state_path(settings)
    if not path.exists():
        return []
    state = StackState.load(path)
    result = []
    for record in state.processes:
        is_alive = alive(record.pid)
        result.append(
            ProcessStatus(
                record.name,
                record.pid,
                record.port,
                is_alive,
                is_alive and healthy(record, timeout_s=1.0),
            )
        )
    return result
