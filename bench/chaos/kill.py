"""Kill -9: each process of the stack in turn, at a random point while work is in flight.

``python -m bench.chaos kill [--services a,b] [--cases 60]`` starts the whole
stack (``bench.chaos.stack``: separate processes, the scripted model through
the model server), then for each process (the model server included; the
broker has its own step, ``broker-restart``): streams a batch of cases, sends
SIGKILL to the process's whole process group at a random moment of the stream,
waits a random moment more, starts it again, and waits until every case of the
batch has ended. Printed per process: cases in / out (results and dead
letters) / missing / doubled (ledger rows per case), and how many had ended
when the kill landed. Exit status 1 if any case is missing, doubled or ended
twice.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from pathlib import Path

from bench.chaos.account import Account, account
from bench.chaos.stack import ChaosStack, StackOptions, add_stack_options, chaos_stack
from bench.chaos.watch import Watcher
from services.kit.testing import run_tag


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.chaos kill", description=__doc__)
    parser.add_argument("--services", help="Comma-separated processes (default: every one).")
    parser.add_argument("--cases", type=int, default=60, help="Cases streamed per kill.")
    parser.add_argument("--rate", type=float, default=10.0, help="Cases per second.")
    parser.add_argument("--seed", type=int, help="Fixes the kill moments.")
    add_stack_options(parser)
    return parser.parse_args(argv)


async def kill_one(
    stack: ChaosStack,
    watcher: Watcher,
    name: str,
    args: argparse.Namespace,
    rng: random.Random,
) -> tuple[Account, int, float]:
    """One batch with ``name`` killed in it; (its account, cases ended at the kill, seconds
    from the kill until the process was healthy again)."""
    cases = [f"kill-{name}-{run_tag()}-{i:03d}" for i in range(args.cases)]
    wanted = set(cases)
    stream_s = args.cases / args.rate
    feeding = asyncio.create_task(stack.send(cases, rate=args.rate))
    await asyncio.sleep(rng.uniform(0.2, 0.8) * stream_s)
    ended_at_kill = len(watcher.ended(wanted))
    stack.kill(name)
    killed = time.perf_counter()
    await asyncio.sleep(rng.uniform(0.0, 2.0))
    await asyncio.to_thread(stack.restart, name)
    back_s = time.perf_counter() - killed
    await feeding
    await watcher.wait_ended(wanted, timeout_s=args.timeout, stall_s=args.timeout / 2)
    return account(stack, watcher, wanted), ended_at_kill, back_s


async def chaos(args: argparse.Namespace, workdir: Path) -> int:
    rng = random.Random(args.seed)
    options = StackOptions(workdir=workdir, store_dsn=args.store, kernel=args.kernel)
    with chaos_stack(options) as stack:
        started = time.perf_counter()
        await stack.start()
        print(f"  stack up in {time.perf_counter() - started:.0f} s ({workdir})", flush=True)
        names = args.services.split(",") if args.services else stack.services
        unknown = [n for n in names if n not in stack.services]
        if unknown:
            print(f"  unknown process(es) {unknown}; known: {', '.join(stack.services)}")
            return 2
        async with Watcher(stack.bootstrap) as watcher:
            warm = {f"warm-{run_tag(8)}"}
            await stack.send(sorted(warm))
            if not await watcher.wait_ended(warm, timeout_s=300):
                print("  the warm-up case did not finish in 300 s; see the logs", flush=True)
                return 1
            print(
                f"  {'killed':<14} {'in':>5} {'out':>5} {'results':>8} {'dead':>5} "
                f"{'missing':>8} {'doubled':>8} {'republished':>12} {'ended@kill':>11} "
                f"{'back in':>8}",
                flush=True,
            )
            worst = 0
            for name in names:
                tally, at_kill, back_s = await kill_one(stack, watcher, name, args, rng)
                print(
                    f"  {name:<14} {tally.cases_in:>5} {tally.results + tally.dead_letters:>5} "
                    f"{tally.results:>8} {tally.dead_letters:>5} {tally.missing:>8} "
                    f"{tally.doubled:>8} {tally.republished:>12} {at_kill:>11} "
                    f"{back_s:>7.1f}s",
                    flush=True,
                )
                worst = max(worst, 0 if tally.ok else 1)
            return worst


def run(argv: list[str]) -> int:
    args = parse(argv)
    if args.workdir is not None:
        return asyncio.run(chaos(args, args.workdir))
    with tempfile.TemporaryDirectory(prefix="reag-chaos-kill-") as tmp:
        return asyncio.run(chaos(args, Path(tmp)))
