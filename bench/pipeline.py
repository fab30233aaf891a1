"""Benchmark: judged criteria per second end to end, against the raw broker for the same bytes.

In one run on the embedded broker: (1) reag's whole pipeline, every service its
own process on the scripted zero-latency model (``bench.chaos.stack``), takes
a burst of cases to results, and the judged criteria per second are counted
from the first send to the last complete result; (2) a relay of plain aiokafka
consumers and producers (acks=all, one task per hop, outputs acknowledged
before the next fetch, as reag's consume path does) moves messages of the mean
size reag's events had on each topic over the same hops with the same fan-out
(one oracle and n judge requests per interpretation, one verdict per request,
one result per case once its n verdicts are in). The ratio is reag's share of
what the broker and its client allow on this machine (goal P1: at least 50%).

The scripted model answers in no time, so this is reag's own overhead: decoding,
validation, the store, the model server's HTTP hops, logging. The machine's
load average is printed with the numbers; other work on these shared cores
moves them.

Then the same stack at hosted-model latencies (issue 27): the scripted model waits
``--latencies`` seconds per call in each calling client (REAG_LLM_SCRIPTED_LATENCY_S),
and every service runs with ``--in-flight`` events at once (REAG_DELIVERY__MAX_IN_FLIGHT,
REAG_LLM_CONCURRENCY alike), "before" (1, one event at a time) and "after" in the same
run on the same broker: the services are restarted between settings, the broker is
not. Each row prints judged criteria per second (one replica of each service), the
ideal for that latency and limit, and the ratio. The ideal at 0 s is the relays'
rate; at a latency L it is F / L, the judge's bound with F calls in flight and one
call per criterion (one annotator, tier 1 accepts): a stage with more calls per
criterion (the retriever's document checks) binds first. ``--replicas`` adds rows at
the largest latency with that many replicas of the judge (the slowest stage at one
call per criterion).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import signal
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from bench.chaos.stack import ChaosStack, StackOptions, chaos_stack, ledger_counts
from bench.chaos.watch import Watcher
from services.kit.testing import run_tag
from services.kit.topology import (
    INTENTIONS,
    INTERPRETATIONS,
    JUDGE_TIER,
    ORACLES,
    RESULTS,
    TRAFFIC,
    VERDICTS,
)
from shell.stack.ports import free_port

RELAY_CASES = 2000
TOPICS = (TRAFFIC, INTENTIONS, INTERPRETATIONS, ORACLES, JUDGE_TIER[1], VERDICTS, RESULTS)


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x]


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench pipeline", description=__doc__)
    parser.add_argument("--cases", type=int, default=150)
    parser.add_argument("--kernel", default="rrf", help="REAG_RETRIEVAL__KERNEL.")
    parser.add_argument(
        "--latencies", type=_floats, default=[0.0, 0.2, 1.0], help="Seconds per model call."
    )
    parser.add_argument(
        "--in-flight", type=_ints, default=[1, 64], help="REAG_DELIVERY__MAX_IN_FLIGHT values."
    )
    parser.add_argument(
        "--before-s",
        type=float,
        default=90.0,
        help="Rough seconds for an in-flight-1 row at a latency: fewer cases there.",
    )
    parser.add_argument(
        "--replicas", type=_ints, default=[], help="Judge replicas at the largest latency."
    )
    parser.add_argument("--warm", type=int, default=5, help="Warm-up cases before measuring.")
    return parser.parse_args(argv)


async def reag_rate(
    stack: ChaosStack, n_cases: int, n_warm: int
) -> tuple[float, int, dict[str, int]]:
    """(judged criteria per second, criteria per case, mean bytes per event per topic)."""
    async with Watcher(stack.bootstrap) as watcher:
        # Warm-up cases fill the caches (ICRALM scores, corpus, thresholds), as in steady state.
        warm = [f"warm-{run_tag()}-{i:02d}" for i in range(n_warm)]
        if warm:
            await stack.send(warm)
            await watcher.wait_ended(set(warm), timeout_s=900)
        cases = [f"bench-{run_tag()}-{i:05d}" for i in range(n_cases)]
        sent = time.time()
        await stack.send(cases)
        await watcher.wait_ended(set(cases), timeout_s=1800)
        done = [c for c in cases if c in watcher.seen.complete_ms]
        span = max(watcher.seen.complete_ms[c] for c in done) / 1000 - sent
        n_criteria = ledger_counts(stack.dsn, set(done)).n_criteria
        criteria = sum(n_criteria.values())
        sizes = {t: watcher.seen.bytes_in[t] // max(1, watcher.seen.records[t]) for t in TOPICS}
    per_case = round(criteria / max(1, len(done)))
    return criteria / span, per_case, sizes


async def _create(bootstrap: str, names: list[str]) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics(
            [NewTopic(n, num_partitions=3, replication_factor=1) for n in names]
        )
    finally:
        await admin.close()


async def _consumer(bootstrap: str, *topics: str) -> AIOKafkaConsumer:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    await consumer.start()
    consumer.assign([TopicPartition(t, p) for t in topics for p in range(3)])
    for t in topics:
        for p in range(3):
            consumer.seek(TopicPartition(t, p), 0)
    return consumer


def _outputs(
    topic: str, key: bytes, per_case: int, counts: dict[bytes, int]
) -> list[tuple[str, bytes]]:
    """What reag's service on ``topic`` publishes for one input: the hop's fan-out."""
    if topic == TRAFFIC:
        return [(INTENTIONS, key)]
    if topic == INTENTIONS:
        return [(INTERPRETATIONS, key)]
    if topic == INTERPRETATIONS:
        return [(ORACLES, key)] + [(JUDGE_TIER[1], key)] * per_case
    if topic == JUDGE_TIER[1]:
        return [(VERDICTS, key)]
    counts[key] += 1  # the ledger: one result once the case's verdicts are all in
    return [(RESULTS, key)] if counts[key] == per_case else []


class Relay:
    """reag's hops with nothing but aiokafka in them: consume, publish, await the acks."""

    def __init__(self, bootstrap: str, per_case: int, sizes: dict[str, int]) -> None:
        self.bootstrap = bootstrap
        self.per_case = per_case
        self.raw = {t: f"bench.raw.{t}.{run_tag()}" for t in TOPICS}
        self.payload = {t: os.urandom(max(1, sizes[t])) for t in TOPICS}
        self.results = 0

    async def hop(self, source: str) -> None:
        consumer = await _consumer(self.bootstrap, self.raw[source])
        producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, acks="all", linger_ms=5)
        await producer.start()
        counts: dict[bytes, int] = defaultdict(int)
        try:
            while True:
                batch = await consumer.getmany(timeout_ms=200)
                futures = [
                    await producer.send(self.raw[target], self.payload[target], key=key)
                    for records in batch.values()
                    for record in records
                    for target, key in _outputs(source, record.key or b"", self.per_case, counts)
                ]
                await asyncio.gather(*futures)
        finally:
            await producer.stop()
            await consumer.stop()

    async def sink(self, n_cases: int) -> None:
        consumer = await _consumer(self.bootstrap, self.raw[RESULTS])
        try:
            while self.results < n_cases:
                batch = await consumer.getmany(timeout_ms=200)
                self.results += sum(len(r) for r in batch.values())
        finally:
            await consumer.stop()

    async def rate(self, n_cases: int) -> float:
        """Criteria per second from the first send to the last result."""
        await _create(self.bootstrap, list(self.raw.values()))
        sources = (TRAFFIC, INTENTIONS, INTERPRETATIONS, JUDGE_TIER[1], VERDICTS)
        hops = [asyncio.create_task(self.hop(t)) for t in sources]
        sink = asyncio.create_task(self.sink(n_cases))
        await asyncio.sleep(1.0)  # consumers assigned before the burst
        producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, acks="all", linger_ms=5)
        await producer.start()
        started = time.perf_counter()
        try:
            futures = [
                await producer.send(
                    self.raw[TRAFFIC], self.payload[TRAFFIC], key=f"case-{i}".encode()
                )
                for i in range(n_cases)
            ]
            await asyncio.gather(*futures)
            await asyncio.wait_for(sink, timeout=600)
        finally:
            elapsed = time.perf_counter() - started
            await producer.stop()
            for task in hops:
                task.cancel()
            await asyncio.gather(*hops, return_exceptions=True)
        return n_cases * self.per_case / elapsed


@dataclass(frozen=True)
class Row:
    latency_s: float
    in_flight: int
    replicas: int
    cases: int
    rate: float
    peak_rss_mib: float


def _rss_mib(pid: int) -> float:
    """Resident memory of one process (Linux), MiB; 0 where /proc is not there."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def reconfigure(stack: ChaosStack, latency_s: float, in_flight: int, judges: int) -> None:
    """Restart every service but the broker and the model server with these settings."""
    stack.env.update(
        {
            "REAG_LLM_SCRIPTED_LATENCY_S": str(latency_s),
            "REAG_DELIVERY__MAX_IN_FLIGHT": str(in_flight),
            # A hosted model takes many calls at once: neither the client's limit nor the
            # retriever's document checks (4 at once per process by default) may be what
            # binds, or the row measures them instead of delivery.
            "REAG_LLM_CONCURRENCY": str(max(8, 8 * in_flight)),
            "REAG_REASONING_CONCURRENCY": str(max(4, 8 * in_flight)),
        }
    )
    extra = [n for n in stack.specs if n.startswith("judge-tier1-r")]
    for name in [n for n in stack.services if n != "model-server"]:
        if name in stack.procs and stack.procs[name].poll() is None:
            stack.kill(name, signal.SIGTERM)
    for name in extra:
        del stack.specs[name]
        stack.procs.pop(name, None)
    base = next(n for n in stack.specs if n.startswith("judge") and "1" in n)
    for i in range(1, judges):
        spec = dataclasses.replace(stack.specs[base], name=f"judge-tier1-r{i}", port=free_port())
        stack.specs[spec.name] = spec
    todo = [n for n in stack.services if n != "model-server"]
    for name in todo:
        stack.spawn(name)
    stack.wait_healthy(todo)


def _cases_for(args: argparse.Namespace, latency_s: float, in_flight: int) -> int:
    cases: int = args.cases
    if latency_s <= 0 or in_flight > 1:
        return cases
    # One event at a time: a case costs several calls' latency per stage.
    before_s: float = args.before_s
    return max(10, min(cases, round(before_s / (latency_s * 6))))


async def measure(args: argparse.Namespace, workdir: Path) -> None:
    rows: list[Row] = []
    # Six partitions, as the chart creates: room for the judge replicas' rows.
    options = StackOptions(workdir=workdir, kernel=args.kernel, partitions=6)
    with chaos_stack(options) as stack:
        await stack.start()
        plan = [(lat, f, 1) for lat in args.latencies for f in args.in_flight]
        top = max(args.latencies)
        plan += [(top, max(args.in_flight), r) for r in args.replicas if r > 1]
        per_case, sizes, warm = 2, dict.fromkeys(TOPICS, 1), args.warm
        for latency_s, in_flight, judges in plan:
            reconfigure(stack, latency_s, in_flight, judges)
            n = _cases_for(args, latency_s, in_flight)
            # Warm-up cases after each restart: every consumer has joined its group (seconds
            # on Tansu) and the caches are full before the clock starts.
            rate, per_case_now, sizes_now = await reag_rate(stack, n, warm)
            if latency_s == 0 and in_flight == 1:
                per_case, sizes = per_case_now, sizes_now
            rss = max(_rss_mib(p.pid) for name, p in stack.procs.items() if name != "broker")
            rows.append(Row(latency_s, in_flight, judges, n, rate, rss))
            print(
                f"  latency {latency_s:4.1f} s, in flight {in_flight:3d}, judges {judges}: "
                f"{rate:7.1f} criteria/s over {n} cases (largest service RSS {rss:.0f} MiB)",
                flush=True,
            )
        # A longer burst for the relay: its rate, not the latency of one short burst.
        relay_cases = max(args.cases, RELAY_CASES)
        raw = await Relay(stack.bootstrap, per_case, sizes).rate(relay_cases)
    load = os.getloadavg()[0]
    print(f"  {args.cases} cases, {per_case} criteria each, ranking {args.kernel}")
    print(
        "  mean bytes per event: "
        + ", ".join(f"{t.removeprefix('reag.')} {sizes[t]}" for t in TOPICS)
    )
    print(f"  raw broker, same hops: {raw:9.1f} criteria/s (aiokafka relays, {relay_cases} cases)")
    print()
    print("  | latency | in flight | judges | cases | criteria/s | ideal | ratio | max RSS MiB |")
    print("  |---|---|---|---|---|---|---|---|")
    for row in rows:
        ideal = raw if row.latency_s == 0 else row.in_flight * row.replicas / row.latency_s
        print(
            f"  | {row.latency_s:g} s | {row.in_flight} | {row.replicas} | {row.cases} "
            f"| {row.rate:.1f} | {ideal:.1f} | {row.rate / ideal:.1%} | {row.peak_rss_mib:.0f} |"
        )
    print(f"  load average {load:.1f} (1 min) at the end; goal P1: >= 50% at 0 s")


def main(argv: list[str]) -> None:
    run(argv)


def run(argv: list[str] | None = None) -> None:
    args = parse(argv or [])
    with tempfile.TemporaryDirectory(prefix="reag-bench-pipeline-") as tmp:
        asyncio.run(measure(args, Path(tmp)))


if __name__ == "__main__":
    import sys

    run(sys.argv[1:])
