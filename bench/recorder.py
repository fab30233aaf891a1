"""Benchmark: what ``Recorder.record()`` adds to an app's request path, on a real broker.

Starts the embedded broker (Tansu, memory storage) on a free port, makes one
``reag.client.Recorder`` against it, waits until it has delivered a first
event (so connecting is not counted), and times ``record()`` in the calling
thread with ``time.perf_counter_ns``, two ways:

- *burst*: N calls back to back, the worst case for the calling thread, since
  the recorder's thread is busy building, redacting and producing the
  earlier events and competes for the GIL;
- *paced*: N calls at ``REAG_BENCH_RATE`` per second (default 500), closer to
  an app answering requests, where the recorder's thread is mostly idle.

Each call records a realistic exchange (a ~300-character query with an e-mail
address and a ~1,200-character answer, a user id, a profile), so the redaction
done off the calling thread is real work. Prints p50/p99/max of the added
latency (goal: p99 under 1 ms) and, after ``flush``, the events the recorder
counted as acknowledged against those a consumer reads back from the topic.
The machine's load average is printed with the numbers: other work on these
shared cores moves them. Knobs: ``REAG_BENCH_CALLS`` (default 1000).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
import uuid

from reag.client import Recorder
from services.kit.testing import read_values
from shell.stack.ports import free_port
from shell.stack.tansu import start_tansu

QUERY = (
    "I'm on dialysis three times a week and my potassium was high last month. "
    "Is this oat drink OK for me, and how much can I have per day? Ingredients: water, "
    "oats 10%, rapeseed oil, tricalcium phosphate, dipotassium phosphate, salt. You can "
    "send the plan to jane.doe@example.com or call me."
)
ANSWER = (
    "This oat drink is not a good fit for a renal diet as it stands. "
    "It contains dipotassium phosphate and tricalcium phosphate, two added phosphates "
    "that are absorbed almost completely, "
) * 6


def _percentile(sorted_us: list[float], q: float) -> float:
    index = min(len(sorted_us) - 1, round(q * (len(sorted_us) - 1)))
    return sorted_us[index]


def _time_calls(recorder: Recorder, calls: int, rate: float | None, tag: str) -> list[float]:
    """Microseconds each ``record()`` took in this thread."""
    taken: list[float] = []
    started = time.monotonic()
    for i in range(calls):
        if rate:
            delay = started + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        before = time.perf_counter_ns()
        recorder.record(
            query=QUERY,
            response=ANSWER,
            profile={"diet": "renal", "age": 61},
            user_id=f"user-{i % 97}",
            request_id=f"{tag}-{i}",
            latency_s=1.2,
        )
        taken.append((time.perf_counter_ns() - before) / 1000)
    return sorted(taken)


def _report(name: str, taken: list[float]) -> None:
    p50, p99 = _percentile(taken, 0.5), _percentile(taken, 0.99)
    verdict = "meets" if p99 < 1000 else "misses"
    print(
        f"  {name:<22} n={len(taken):<5} p50 {p50:7.1f} us   p99 {p99:7.1f} us   "
        f"max {taken[-1]:8.1f} us   ({verdict} the p99 < 1 ms goal)"
    )


def run() -> None:
    """Entry point of ``python -m bench`` (and of ``python -m bench.recorder``)."""
    calls = int(os.environ.get("REAG_BENCH_CALLS", "1000"))
    rate = float(os.environ.get("REAG_BENCH_RATE", "500"))
    port = free_port()
    broker = start_tansu(port)
    bootstrap = f"127.0.0.1:{port}"
    topic = f"bench.recorder.{uuid.uuid4().hex[:8]}"
    try:
        with Recorder(
            bootstrap_servers=bootstrap, app="bench", topic=topic, close_timeout_s=30
        ) as recorder:
            recorder.record(query="warm-up", response="ok", request_id="warm-up")
            if not recorder.flush(30):
                print(f"  the recorder could not deliver to {bootstrap} in 30 s; no numbers")
                return
            load = os.getloadavg()
            print(
                f"  broker: Tansu on {bootstrap}; {calls} calls each; load average "
                f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
            )
            burst = _time_calls(recorder, calls, None, "burst")
            delivered = recorder.flush(60)
            paced = _time_calls(recorder, calls, rate, "paced")
            delivered = recorder.flush(60) and delivered
            stats = recorder.stats()
        _report("burst (back to back)", burst)
        _report(f"paced ({rate:.0f}/s)", paced)
        expected = 1 + 2 * calls
        values = asyncio.run(
            read_values(bootstrap, topic, lambda vs: len(vs) >= expected, timeout_s=60)
        )
        print(
            f"  events: {expected} recorded calls; {stats.recorded} acknowledged, "
            f"{stats.dropped_queue_full} dropped (queue full), {stats.failed} failed; "
            f"{len(values)} read back from {topic}" + ("" if delivered else " (flush timed out)")
        )
    finally:
        broker.terminate()
        try:
            broker.wait(timeout=5)
        except subprocess.TimeoutExpired:
            broker.kill()


if __name__ == "__main__":
    run()
