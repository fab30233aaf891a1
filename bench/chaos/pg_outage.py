"""PostgreSQL outage at the ledger: traffic keeps coming, no result is lost or doubled.

The ledger service runs in process on the embedded broker, its store in a
schema of its own on the machine's PostgreSQL, reached through a TCP proxy
(``bench.chaos.proxy``) that is cut for the outage: the shared server itself is
never touched. Oracles and verdicts of ``cases`` test cases are produced at a
steady rate; a third of the way in, the proxy is cut for ``outage_s`` seconds.
Events met by the outage wait with their partition paused and are retried with
backoff (services.kit.delivery); none may be dead-lettered. Afterwards the
ledger's own rows are counted per case: cases in, complete results out, cases
with more rows than criteria (doubled), and dead letters.

``python -m bench.chaos pg-outage [--cases N] [--outage-s S] [--rate R]``.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from dataclasses import asdict, dataclass
from urllib.parse import urlsplit

from aiokafka import AIOKafkaProducer
from prometheus_client import REGISTRY
from sqlalchemy import Engine, func, select, text

from bench.chaos.proxy import CuttableProxy
from reag.ledger.store import LedgerStore
from reag.ledger.tables import LedgerCaseRow, LedgerCriterionRow
from reag.storage import make_engine
from reag.v1 import events_pb2 as pb
from services.kit.admin import ensure_topics
from services.kit.broker import make_broker
from services.kit.settings import DeliverySettings, KafkaSettings
from services.kit.testing import read_values
from services.kit.topology import DLQ, ORACLES, VERDICTS
from services.ledger.handlers import build_router
from services.ledger.settings import LedgerSettings
from shell.stack.ports import free_port
from shell.stack.tansu import start_tansu

POSTGRES_DSN = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
CRITERIA = 2


@dataclass(frozen=True, slots=True)
class OutageCounts:
    cases_in: int
    results_out: int  # cases whose result is complete in the ledger
    doubled: int  # cases with more case or criterion rows than they should have
    dead_letters: int  # the ledger's dead letters of this run's cases
    database_retries: int  # events put back on a paused partition (reag_transient_retries_total)
    outage_s: float
    recovery_s: float  # from the proxy's restore to the last result landing

    @property
    def held(self) -> bool:
        """Nothing lost, nothing doubled, nothing dead-lettered."""
        return self.results_out == self.cases_in and not self.doubled and not self.dead_letters

    def line(self) -> str:
        return (
            f"cases in {self.cases_in}, results out {self.results_out}, doubled {self.doubled}, "
            f"dead letters {self.dead_letters}, database retries {self.database_retries}, "
            f"outage {self.outage_s:.0f} s, recovered {self.recovery_s:.1f} s after it"
        )


def _meta(case_id: str, run: str) -> pb.EventMeta:
    meta = pb.EventMeta(
        case_id=case_id, app="chaos", run_id=run, schema_version=pb.SCHEMA_VERSION_1
    )
    meta.created_at.GetCurrentTime()
    return meta


def case_events(case_id: str, run: str) -> tuple[pb.Oracle, list[pb.Verdict]]:
    """An oracle with ``CRITERIA`` criteria and an accepted tier-1 verdict for each."""
    oracle = pb.Oracle(
        meta=_meta(case_id, run),
        oracle_id=f"{case_id}/oracle",
        test_objective="objective",
        expected_results="expected",
    )
    verdicts = []
    for i in range(CRITERIA):
        criterion = pb.Criterion(criterion_id=f"{case_id}/c{i}", index=i, text=f"rule {i}")
        oracle.criteria.append(criterion)
        verdicts.append(
            pb.Verdict(
                meta=_meta(case_id, run),
                criterion_id=criterion.criterion_id,
                oracle_id=oracle.oracle_id,
                n_criteria=CRITERIA,
                label=pb.LABEL_YES,
                tier=1,
                confidence=0.95,
                threshold=0.9,
                criterion=criterion,
            )
        )
    return oracle, verdicts


def _retries(suffix: str) -> float:
    return sum(
        REGISTRY.get_sample_value(
            "reag_transient_retries_total",
            {"service": "ledger", "topic": topic + suffix, "kind": "database"},
        )
        or 0.0
        for topic in (ORACLES, VERDICTS)
    )


async def run_outage(
    bootstrap: str,
    *,
    cases: int,
    outage_s: float,
    rate_per_s: float,
    delivery: DeliverySettings,
    pg_dsn: str = POSTGRES_DSN,
    settle_s: float = 300.0,
) -> OutageCounts:
    """One outage under traffic; the schema is dropped and the proxy stopped afterwards."""
    run = uuid.uuid4().hex[:10]
    suffix, schema = f".pg-{run}", f"chaos_{run}"
    target = urlsplit(pg_dsn.replace("postgresql+psycopg", "postgresql"))
    admin = make_engine(pg_dsn)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    proxy = CuttableProxy(target.hostname or "127.0.0.1", target.port or 5432).start()
    proxied = pg_dsn.replace(f"{target.hostname}:{target.port}", f"127.0.0.1:{proxy.port}")
    tables = {None: schema}
    store = LedgerStore(make_engine(proxied).execution_options(schema_translate_map=tables))
    reader = LedgerStore(admin.execution_options(schema_translate_map=tables))
    kafka = KafkaSettings(bootstrap_servers=bootstrap)
    settings = LedgerSettings(kafka=kafka, topic_suffix=suffix, delivery=delivery)
    retries_before = _retries(suffix)
    try:
        await ensure_topics(kafka, suffix)
        await ensure_topics(kafka)
        broker = make_broker(kafka, f"ledger-{run}")
        broker.include_router(build_router(settings, store))
        ids = [f"chaos-{run}-{i:05d}" for i in range(cases)]
        async with broker:
            await broker.start()
            # The consumer groups take ~20 s to form on Tansu: the outage must meet a ledger
            # that is consuming, so one warm-up case lands first (it is not counted).
            await _traffic(bootstrap, [f"warm-{run}"], run, suffix, proxy, 0.0, 100.0)
            if not await _settle(reader, [f"warm-{run}"], settle_s):
                raise RuntimeError("the ledger never recorded the warm-up case")
            restored_at = await _traffic(bootstrap, ids, run, suffix, proxy, outage_s, rate_per_s)
            landed = await _settle(reader, ids, settle_s)
            recovery_s = max(0.0, time.monotonic() - restored_at) if landed else float("nan")
        doubled = _doubled(admin, schema, ids)
        letters = await read_values(bootstrap, DLQ, lambda vs: False, timeout_s=3.0)
        mine = [pb.DeadLetter.FromString(v) for v in letters]
        dead = sum(
            x.service == "ledger" and x.key.decode().startswith(f"chaos-{run}") for x in mine
        )
        complete = sum(1 for case_id in ids if _complete(reader, case_id))
    finally:
        store.close()
        proxy.stop()
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
    return OutageCounts(
        cases_in=cases,
        results_out=complete,
        doubled=doubled,
        dead_letters=dead,
        database_retries=int(_retries(suffix) - retries_before),
        outage_s=outage_s,
        recovery_s=recovery_s,
    )


async def _traffic(  # noqa: PLR0917
    bootstrap: str,
    ids: list[str],
    run: str,
    suffix: str,
    proxy: CuttableProxy,
    outage_s: float,
    rate_per_s: float,
) -> float:
    """Produce every case at ``rate_per_s``, cutting the proxy a third of the way in;
    returns the monotonic time of the restore."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    cut_at = len(ids) // 3
    restored_at = time.monotonic()
    restore: asyncio.Task[float] | None = None

    async def restore_later() -> float:
        await asyncio.sleep(outage_s)
        await asyncio.to_thread(proxy.restore)
        return time.monotonic()

    started = time.monotonic()
    try:
        for i, case_id in enumerate(ids):
            if i == cut_at and outage_s > 0:
                await asyncio.to_thread(proxy.cut)
                restore = asyncio.create_task(restore_later())
            oracle, verdicts = case_events(case_id, run)
            key = case_id.encode()
            await producer.send_and_wait(ORACLES + suffix, oracle.SerializeToString(), key=key)
            for verdict in verdicts:
                await producer.send_and_wait(
                    VERDICTS + suffix, verdict.SerializeToString(), key=key
                )
            delay = started + (i + 1) / rate_per_s - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        if restore is not None:
            restored_at = await restore
    finally:
        await producer.stop()
    return restored_at


def _complete(reader: LedgerStore, case_id: str) -> bool:
    result = reader.get_result(case_id)
    return result is not None and result.complete and len(result.criteria) == CRITERIA


async def _settle(reader: LedgerStore, ids: list[str], timeout_s: float) -> bool:
    """Whether every case's result landed within ``timeout_s`` of the traffic's end."""
    deadline = time.monotonic() + timeout_s
    pending = list(ids)
    while pending and time.monotonic() < deadline:
        pending = [c for c in pending if not await asyncio.to_thread(_complete, reader, c)]
        if pending:
            await asyncio.sleep(0.5)
    return not pending


def _doubled(admin: Engine, schema: str, ids: list[str]) -> int:
    """Cases with more than one case row or more criterion rows than criteria."""
    engine = admin.execution_options(schema_translate_map={None: schema})
    with engine.connect() as conn:
        cases = conn.execute(
            select(LedgerCaseRow.case_id, func.count()).group_by(LedgerCaseRow.case_id)
        ).all()
        criteria = conn.execute(
            select(LedgerCriterionRow.case_id, func.count()).group_by(LedgerCriterionRow.case_id)
        ).all()
    wanted = set(ids)
    over = {c for c, n in cases if c in wanted and n > 1}
    over |= {c for c, n in criteria if c in wanted and n > CRITERIA}
    return len(over)


def run(argv: list[str] | None = None) -> int:
    """The ``make chaos`` step: a 60 s outage under traffic on a broker of its own."""
    parser = argparse.ArgumentParser(prog="python -m bench.chaos pg-outage")
    parser.add_argument("--cases", type=int, default=400)
    parser.add_argument("--outage-s", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=4.0, help="cases per second")
    parser.add_argument("--retry-max-s", type=float, default=10.0)
    args = parser.parse_args(argv or [])
    port = free_port()
    proc = start_tansu(port)
    delivery = DeliverySettings(retry_initial_s=1.0, retry_max_s=args.retry_max_s)
    try:
        counts = asyncio.run(
            run_outage(
                f"127.0.0.1:{port}",
                cases=args.cases,
                outage_s=args.outage_s,
                rate_per_s=args.rate,
                delivery=delivery,
            )
        )
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print(f"pg-outage: {counts.line()}", flush=True)
    print(f"pg-outage: {asdict(counts)}", flush=True)
    return 0 if counts.held else 1
