"""Load: cases through the whole pipeline on the real embedded broker, the scripted model.

``python -m bench.chaos load [--cases 10000]`` starts every reag process on its
own (``bench.chaos.stack``), sends one live traffic event per case as fast as
the broker takes them, and waits until every case has ended. Printed: cases in
/ out (results and dead letters) / missing / doubled (ledger rows per case),
throughput (cases and judged criteria per second, first send to last result),
each hop's latency per case (queue wait and work, from the broker's record
timestamps) and each service's own time per event (``reag_stage_seconds``).
Exit status 1 if a case is missing, doubled or ended twice.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from bench.chaos.account import account, stage_work
from bench.chaos.stack import StackOptions, add_stack_options, chaos_stack
from bench.chaos.watch import Watcher, percentiles
from services.kit.testing import run_tag


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.chaos load", description=__doc__)
    parser.add_argument("--cases", type=int, default=10_000)
    add_stack_options(parser, timeout_s=3600.0)
    parser.add_argument("--rate", type=float, help="Events per second (default: a burst).")
    return parser.parse_args(argv)


async def load(args: argparse.Namespace, workdir: Path) -> int:
    options = StackOptions(workdir=workdir, store_dsn=args.store, kernel=args.kernel)
    with chaos_stack(options) as stack:
        started = time.perf_counter()
        await stack.start()
        print(f"  stack up in {time.perf_counter() - started:.0f} s ({workdir})", flush=True)
        async with Watcher(stack.bootstrap) as watcher:
            warm = {f"warm-{run_tag(8)}"}
            await stack.send(sorted(warm))
            if not await watcher.wait_ended(warm, timeout_s=300):
                print("  the warm-up case did not finish in 300 s; see the logs", flush=True)
                return 1
            run = run_tag(8)
            cases = [f"load-{run}-{i:05d}" for i in range(args.cases)]
            wanted = set(cases)
            sent_at = time.time()
            await stack.send(cases, rate=args.rate)
            print(f"  sent {len(cases)} in {time.time() - sent_at:.1f} s", flush=True)
            await watcher.wait_ended(wanted, timeout_s=args.timeout)
            tally = account(stack, watcher, wanted)
            ends = [
                watcher.seen.complete_ms[c] / 1000 for c in wanted if c in watcher.seen.complete_ms
            ]
            span = (max(ends) - sent_at) if ends else float("nan")
            criteria = sum(
                n for c, n in _criteria(stack.dsn, wanted).items() if c in watcher.seen.complete_ms
            )
            print(f"load: {tally.line()}")
            print(
                f"throughput: {tally.results / span:.1f} cases/s, {criteria / span:.1f} judged "
                f"criteria/s ({criteria} criteria, {span:.0f} s from the first send to the last "
                "result)"
            )
            print(f"  {'hop (queue + work), s':<24} {'p50':>8} {'p95':>8} {'p99':>8} {'max':>8}")
            for hop, values in watcher.hop_latencies(wanted).items():
                p50, p95, p99, top = percentiles(values)
                print(f"  {hop:<24} {p50:>8.3f} {p95:>8.3f} {p99:>8.3f} {top:>8.3f}")
            print(f"  {'work per event, s':<24} {'events':>8} {'mean':>8} {'p95 ≤':>8}")
            for service, (n, mean, p95) in stage_work(stack).items():
                print(f"  {service:<24} {n:>8} {mean:>8.4f} {p95:>8.2f}")
            return 0 if tally.ok else 1


def _criteria(dsn: str, cases: set[str]) -> dict[str, int]:
    from bench.chaos.stack import ledger_counts

    return ledger_counts(dsn, cases).n_criteria


def run(argv: list[str]) -> int:
    args = parse(argv)
    if args.workdir is not None:
        return asyncio.run(load(args, args.workdir))
    with tempfile.TemporaryDirectory(prefix="reag-chaos-load-") as tmp:
        return asyncio.run(load(args, Path(tmp)))
