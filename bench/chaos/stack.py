"""The stack a chaos run drives: every reag process on its own, on the scripted model.

The processes are the embedded stack's (``shell.stack.supervisor.plan``: the
Tansu broker, the model server, each service) less the sample app, on free
ports in a working directory of their own, so a run never meets ``reag up``'s
stack or another run. Every LLM call goes to ``scripted:<name>``
(``reag.llm.scripted``) through the model server, so killing the model server
is a fault the services must ride out like a real one. The example app's
corpus is in the store before anything starts, and a tier-1 threshold fitted
on the scripted judge is on the thresholds topic, so criteria are accepted at
tier 1 and cases complete.

Nothing here judges anything: the run measures reag's own throughput and
losses.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from aiokafka import AIOKafkaProducer
from sqlalchemy import func, select

from reag.apps import load_app
from reag.calibration.store import CalibrationStore
from reag.corpus.loader import load_sources
from reag.corpus.manifest import load_manifest
from reag.corpus.store import CorpusStore
from reag.judging.identity import JudgeIdentity
from reag.ledger.tables import LedgerCaseRow, LedgerCriterionRow
from reag.llm.registry import make_client
from reag.llm.settings import LLMSettings
from reag.storage import make_engine
from reag.traffic.live import TRAFFIC_HEADERS, LiveExchange, to_traffic
from reag.v1 import events_pb2 as pb
from services.judge.main import build_tier
from services.judge.settings import JudgeSettings
from services.kit.admin import ensure_topics
from services.kit.settings import KafkaSettings
from services.kit.testing import produce_events
from services.kit.topology import THRESHOLDS, TRAFFIC
from shell.stack.ports import free_port, free_port_block
from shell.stack.supervisor import ProcessSpec, StackSettings, healthy, plan
from shell.stack.tansu import broker_command

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "examples/nutrition/app.yaml"
APP = "nutrition"
MODEL = "scripted:load"


class ChaosError(RuntimeError):
    """A process of the chaos stack would not start; the message names its log."""


@dataclass
class StackOptions:
    workdir: Path
    store_dsn: str | None = None  # None: SQLite in the working directory
    kernel: str = "icralm"
    partitions: int = 3
    stuck_after_s: float = 3600.0
    extra_env: dict[str, str] = field(default_factory=dict)


class ChaosStack:
    """Starts, kills and restarts the processes; publishes traffic; counts the ledger."""

    def __init__(self, options: StackOptions) -> None:
        self.options = options
        self.workdir = options.workdir.resolve()
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "logs").mkdir(exist_ok=True)
        self.dsn = options.store_dsn or f"sqlite:///{self.workdir / 'reag.db'}"
        kafka_port, model_port = free_port(), free_port()
        self.bootstrap = f"127.0.0.1:{kafka_port}"
        self.env = {
            "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
            "PYTHONUNBUFFERED": "1",
            "HF_HUB_OFFLINE": "1",
            "REAG_STATE_DIR": str(self.workdir),
            "REAG_STORE_DSN": self.dsn,
            "REAG_KAFKA__BOOTSTRAP_SERVERS": self.bootstrap,
            "REAG_KAFKA__PARTITIONS": str(options.partitions),
            "REAG_LLM_LOCAL_URL": f"http://127.0.0.1:{model_port}",
            "REAG_LLM_MODEL": MODEL,
            "REAG_RANKING_MODEL": MODEL,
            "REAG_REASONING_MODEL": MODEL,
            "REAG_ORACLE_MODEL": MODEL,
            "REAG_LLM_ALLOW_SCRIPTED": "true",
            # A killed model server must be waited out, not dead-lettered: ~90 s of retries.
            "REAG_LLM_MAX_RETRIES": "10",
            "REAG_TIER_MODELS": MODEL,
            "REAG_TIER_ANNOTATORS": "1",
            "REAG_RETRIEVAL__KERNEL": options.kernel,
            "REAG_LEDGER_GRPC_PORT": str(free_port()),
            "REAG_LEDGER_STUCK_AFTER_S": str(options.stuck_after_s),
            "REAG_LEDGER_STUCK_EVERY_S": "2",
            "REAG_LOG_LEVEL": "WARNING",
            **options.extra_env,
        }
        with self.environment():
            specs = plan(
                StackSettings(
                    kafka_port=kafka_port,
                    model_port=model_port,
                    sample_app_port=free_port(),
                    service_port_base=free_port_block(12),
                    state_dir=self.workdir,
                    app_manifest=MANIFEST,
                )
            )
        self.specs: dict[str, ProcessSpec] = {s.name: s for s in specs if s.name != "sample-app"}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.kafka = KafkaSettings(bootstrap_servers=self.bootstrap, partitions=options.partitions)

    @contextlib.contextmanager
    def environment(self) -> Iterator[None]:
        """This process's environment as the stack's processes see it, for the settings this
        process reads too (the cascade, the judge's identity); restored afterwards."""
        saved = dict(os.environ)
        for key in [k for k in os.environ if k.startswith("REAG_")]:
            del os.environ[key]
        os.environ.update(self.env)
        try:
            yield
        finally:
            os.environ.clear()
            os.environ.update(saved)

    @property
    def services(self) -> list[str]:
        """Every process but the broker, in start order (the model server first)."""
        return [name for name in self.specs if name != "broker"]

    # --- processes -----------------------------------------------------------------

    def spawn(self, name: str) -> None:
        spec = self.specs[name]
        if name == "broker":  # a new cluster id each start, as `reag up` gives one
            spec.argv = broker_command(spec.port)
        base = {k: v for k, v in os.environ.items() if not k.startswith("REAG_")}
        env = {**base, **self.env, **spec.env, "REAG_HTTP_PORT": str(spec.port)}
        with (self.workdir / "logs" / f"{name}.log").open("ab") as log:
            self.procs[name] = subprocess.Popen(
                spec.argv,
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def wait_healthy(self, names: list[str], timeout_s: float = 180.0) -> None:
        deadline = time.monotonic() + timeout_s
        waiting = list(names)
        while waiting:
            for name in list(waiting):
                proc = self.procs[name]
                if proc.poll() is not None:
                    raise ChaosError(f"{name} exited with {proc.returncode}; see {self.log(name)}")
                if healthy(self.specs[name], timeout_s=1.0):
                    waiting.remove(name)
            if waiting and time.monotonic() > deadline:
                raise ChaosError(f"not healthy after {timeout_s:.0f}s: {', '.join(waiting)}")
            if waiting:
                time.sleep(0.3)

    def log(self, name: str) -> Path:
        return self.workdir / "logs" / f"{name}.log"

    def kill(self, name: str, sig: signal.Signals = signal.SIGKILL) -> None:
        proc = self.procs[name]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        proc.wait(timeout=30)

    def restart(self, name: str) -> None:
        self.spawn(name)
        self.wait_healthy([name])

    async def start(self) -> None:
        await self.start_broker()
        self.load_corpus()
        await self.publish_threshold()
        self.spawn("model-server")
        self.wait_healthy(["model-server"])
        rest = [n for n in self.services if n != "model-server"]
        for name in rest:
            self.spawn(name)
        self.wait_healthy(rest)

    async def start_broker(self) -> None:
        self.spawn("broker")
        self.wait_healthy(["broker"], timeout_s=30)
        await ensure_topics(self.kafka)

    def stop(self) -> None:
        for name in reversed(list(self.procs)):
            proc = self.procs[name]
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=15)

    # --- data ----------------------------------------------------------------------

    def load_corpus(self) -> None:
        manifest = load_manifest(MANIFEST)
        CorpusStore.open(self.dsn).add(APP, load_sources(manifest.corpus_paths(), APP))

    async def publish_threshold(self) -> None:
        """A tier-1 threshold fitted on the scripted judge, as the calibrator publishes one."""
        with self.environment():
            settings = JudgeSettings(tier=1)
            llm = LLMSettings(local_url=None)
        client = make_client(MODEL, settings=llm)
        deps = build_tier(settings, client, CalibrationStore.open(self.dsn))
        threshold = pb.Threshold(
            app=APP, tier=1, has_threshold=True, threshold=0.5, alpha=0.1, delta=0.1, mode="cascade"
        )
        threshold.computed_at.GetCurrentTime()
        JudgeIdentity.of_judge(await deps.judge_for(APP)).stamp(threshold)
        await produce_events(self.bootstrap, THRESHOLDS, [threshold], f"{APP}/1")

    async def send(self, case_ids: list[str], rate: float | None = None) -> None:
        """One live traffic event per case id, keyed by it (``rate``: events per second)."""
        seeds = load_app(MANIFEST).load_seed_queries()
        producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, acks="all", linger_ms=5)
        await producer.start()
        try:
            pending = []
            for index, case_id in enumerate(case_ids):
                seed = seeds[index % len(seeds)]
                event = to_traffic(
                    LiveExchange(
                        query=f"{seed.text}\n\n[{seed.context_title}]\n{seed.context}",
                        response="It looks fine; enjoy it in moderation.",
                        request_id=case_id,
                        persona_hint=seed.persona_hint,
                    ),
                    APP,
                )
                event.meta.case_id = case_id
                pending.append(
                    await producer.send(
                        TRAFFIC,
                        event.SerializeToString(),
                        key=case_id.encode(),
                        headers=list(TRAFFIC_HEADERS),
                    )
                )
                if len(pending) >= 500:
                    await asyncio.gather(*pending)
                    pending = []
                if rate:
                    await asyncio.sleep(1 / rate)
            await asyncio.gather(*pending)
        finally:
            await producer.stop()


@dataclass(frozen=True)
class LedgerCounts:
    """What the ledger's tables hold for some cases: rows per case and criterion rows."""

    case_rows: dict[str, int]
    criterion_rows: dict[str, int]
    n_criteria: dict[str, int]
    complete: set[str]
    with_oracle: set[str]

    def doubled(self, cases: set[str]) -> set[str]:
        """Cases with more than one row, or more criterion rows than criteria."""
        return {
            c
            for c in cases
            if self.case_rows.get(c, 0) > 1
            or self.criterion_rows.get(c, 0) > max(1, self.n_criteria.get(c, 0))
        }


def ledger_counts(dsn: str, cases: set[str]) -> LedgerCounts:
    engine = make_engine(dsn)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                select(
                    LedgerCaseRow.case_id,
                    LedgerCaseRow.n_criteria,
                    LedgerCaseRow.complete,
                    LedgerCaseRow.oracle.is_not(None),
                )
            ).all()
            criteria = conn.execute(
                select(LedgerCriterionRow.case_id, func.count()).group_by(
                    LedgerCriterionRow.case_id
                )
            ).all()
    finally:
        engine.dispose()
    case_rows: dict[str, int] = {}
    n_criteria: dict[str, int] = {}
    complete: set[str] = set()
    with_oracle: set[str] = set()
    for case_id, n, done, has_oracle in rows:
        if case_id not in cases:
            continue
        case_rows[case_id] = case_rows.get(case_id, 0) + 1
        n_criteria[case_id] = int(n)
        if done:
            complete.add(case_id)
        if has_oracle:
            with_oracle.add(case_id)
    criterion_rows = {c: int(n) for c, n in criteria if c in cases}
    return LedgerCounts(case_rows, criterion_rows, n_criteria, complete, with_oracle)


@contextlib.contextmanager
def chaos_stack(options: StackOptions) -> Iterator[ChaosStack]:
    stack = ChaosStack(options)
    try:
        yield stack
    finally:
        stack.stop()


def add_stack_options(parser: argparse.ArgumentParser, *, timeout_s: float = 600.0) -> None:
    """The options every chaos step takes for the stack it starts."""
    parser.add_argument("--store", help="SQLAlchemy URL of the store (default: SQLite).")
    parser.add_argument("--kernel", default="icralm", help="REAG_RETRIEVAL__KERNEL.")
    parser.add_argument("--timeout", type=float, default=timeout_s, help="Seconds to wait.")
    parser.add_argument("--workdir", type=Path, help="Logs and the SQLite store (default: temp).")
