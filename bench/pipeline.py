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
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from bench.chaos.stack import ChaosStack, StackOptions, chaos_stack, ledger_counts
from bench.chaos.watch import Watcher
from services.kit.topology import (
    INTENTIONS,
    INTERPRETATIONS,
    JUDGE_TIER,
    ORACLES,
    RESULTS,
    TRAFFIC,
    VERDICTS,
)

RELAY_CASES = 2000
TOPICS = (TRAFFIC, INTENTIONS, INTERPRETATIONS, ORACLES, JUDGE_TIER[1], VERDICTS, RESULTS)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench pipeline", description=__doc__)
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--kernel", default="icralm", help="REAG_RETRIEVAL__KERNEL.")
    return parser.parse_args(argv)


async def reag_rate(stack: ChaosStack, n_cases: int) -> tuple[float, int, dict[str, int]]:
    """(judged criteria per second, criteria per case, mean bytes per event per topic)."""
    async with Watcher(stack.bootstrap) as watcher:
        # One warm-up case per seed query fills the ICRALM score cache, as in steady state.
        warm = [f"warm-{uuid.uuid4().hex[:6]}-{i:02d}" for i in range(50)]
        await stack.send(warm)
        await watcher.wait_ended(set(warm), timeout_s=900)
        cases = [f"bench-{uuid.uuid4().hex[:6]}-{i:05d}" for i in range(n_cases)]
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
        self.raw = {t: f"bench.raw.{t}.{uuid.uuid4().hex[:6]}" for t in TOPICS}
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


async def measure(args: argparse.Namespace, workdir: Path) -> None:
    with chaos_stack(StackOptions(workdir=workdir, kernel=args.kernel)) as stack:
        await stack.start()
        reag, per_case, sizes = await reag_rate(stack, args.cases)
        # A longer burst for the relay: its rate, not the latency of one short burst.
        raw = await Relay(stack.bootstrap, per_case, sizes).rate(max(args.cases, RELAY_CASES))
    load = os.getloadavg()[0]
    print(f"  {args.cases} cases, {per_case} criteria each, ranking {args.kernel}")
    print(
        "  mean bytes per event: "
        + ", ".join(f"{t.removeprefix('reag.')} {sizes[t]}" for t in TOPICS)
    )
    print(f"  reag end to end:        {reag:9.1f} judged criteria/s")
    print(
        f"  raw broker, same hops:  {raw:9.1f} criteria/s "
        f"(same bytes, aiokafka relays, {max(args.cases, RELAY_CASES)} cases)"
    )
    print(f"  ratio: {reag / raw:.1%} (goal P1: >= 50%); load average {load:.1f}")


def run(argv: list[str] | None = None) -> None:
    args = parse(argv or [])
    with tempfile.TemporaryDirectory(prefix="reag-bench-pipeline-") as tmp:
        asyncio.run(measure(args, Path(tmp)))


if __name__ == "__main__":
    import sys

    run(sys.argv[1:])
