"""Follows a chaos run from outside: what reached each topic, per case, and when.

Reads every partition of the pipeline's topics from the start with no consumer
group (nothing to join, nothing committed), keyed by case id as every reag
event is. From the broker's record timestamps it gives each hop's latency per
case (queue wait and work: the producer's clock at each hop's output).
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from aiokafka import AIOKafkaConsumer
from aiokafka.errors import KafkaError

from reag.v1 import events_pb2 as pb
from services.kit.topology import (
    DLQ,
    INTENTIONS,
    INTERPRETATIONS,
    JUDGE_TIER,
    ORACLES,
    RESULTS,
    TRAFFIC,
    VERDICTS,
)

TOPICS = (TRAFFIC, INTENTIONS, INTERPRETATIONS, ORACLES, JUDGE_TIER[1], VERDICTS, RESULTS, DLQ)
# Each hop: the service, the topic its input was on, the topic its output goes to.
HOPS = (
    ("elicitor", TRAFFIC, INTENTIONS),
    ("retriever", INTENTIONS, INTERPRETATIONS),
    ("oracle", INTERPRETATIONS, ORACLES),
    ("judge-tier1", JUDGE_TIER[1], VERDICTS),
)


@dataclass
class Seen:
    first_ms: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(dict))
    last_ms: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(dict))
    complete_ms: dict[str, int] = field(default_factory=dict)
    results: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    dead: dict[str, str] = field(default_factory=dict)  # case id -> error type
    bytes_in: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # per topic
    records: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # per topic


class Watcher:
    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.seen = Seen()
        self.arrived = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._consumer: AIOKafkaConsumer | None = None

    async def __aenter__(self) -> Watcher:
        self._consumer = AIOKafkaConsumer(
            *TOPICS,
            bootstrap_servers=self.bootstrap,
            auto_offset_reset="earliest",
            group_id=None,
            max_partition_fetch_bytes=4 * 1024 * 1024,
        )
        await self._consumer.start()
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, KafkaError):
                await self._task
        if self._consumer is not None:
            with contextlib.suppress(KafkaError):
                await self._consumer.stop()

    async def _run(self) -> None:
        assert self._consumer is not None
        while True:
            batch = await self._consumer.getmany(timeout_ms=300, max_records=5000)
            for records in batch.values():
                for record in records:
                    self._take(
                        record.topic, record.key or b"", record.value or b"", record.timestamp
                    )
            if batch:
                self.arrived.set()

    def _take(self, topic: str, key: bytes, value: bytes, ts: int) -> None:
        case = key.decode("utf-8", "replace")
        seen = self.seen
        seen.first_ms[topic].setdefault(case, ts)
        seen.last_ms[topic][case] = ts
        seen.bytes_in[topic] += len(value)
        seen.records[topic] += 1
        if topic == RESULTS:
            seen.results[case] += 1
            if case not in seen.complete_ms and pb.Result.FromString(value).complete:
                seen.complete_ms[case] = ts
        elif topic == DLQ:
            seen.dead.setdefault(case, pb.DeadLetter.FromString(value).error_type)

    def ended(self, cases: set[str]) -> set[str]:
        return {c for c in cases if c in self.seen.complete_ms or c in self.seen.dead}

    async def wait_ended(
        self,
        cases: set[str],
        *,
        timeout_s: float,
        stall_s: float = 120.0,
        until: int | None = None,
    ) -> set[str]:
        """Until every case (or ``until`` of them) has a complete result or a dead letter,
        the time is up, or nothing new ended for ``stall_s``; returns the cases that ended."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        last_progress, last_n = loop.time(), -1
        wanted = len(cases) if until is None else min(until, len(cases))
        while True:
            done = self.ended(cases)
            if len(done) >= wanted:
                return done
            now = loop.time()
            if len(done) != last_n:
                last_progress, last_n = now, len(done)
            if now > deadline or now - last_progress > stall_s:
                return done
            self.arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.arrived.wait(), timeout=1.0)

    def hop_latencies(self, cases: set[str]) -> dict[str, list[float]]:
        """Seconds per case from a hop's input to its output, and end to end."""
        first, last = self.seen.first_ms, self.seen.last_ms
        out: dict[str, list[float]] = {}
        for service, source, target in HOPS:
            into, outof = first[source], (last if target == VERDICTS else first)[target]
            out[service] = [(outof[c] - into[c]) / 1000 for c in cases if c in into and c in outof]
        done = self.seen.complete_ms
        out["ledger"] = [
            (done[c] - last[VERDICTS][c]) / 1000 for c in cases if c in done and c in last[VERDICTS]
        ]
        out["end to end"] = [
            (done[c] - first[TRAFFIC][c]) / 1000 for c in cases if c in done and c in first[TRAFFIC]
        ]
        return out


def percentiles(values: list[float]) -> tuple[float, float, float, float]:
    """p50, p95, p99 and max, in seconds (zeros for no values)."""
    if not values:
        return (0.0, 0.0, 0.0, 0.0)
    if len(values) == 1:
        return (values[0], values[0], values[0], values[0])
    q = statistics.quantiles(values, n=100, method="inclusive")
    return (q[49], q[94], q[98], max(values))
