"""Broker restart: the embedded Tansu broker killed and started again while cases are in flight.

Tansu's memory storage keeps nothing, so every event in flight and every
committed offset is gone; what must hold is that (1) the services reconnect and
take new traffic to results, and (2) the loss is detected and reported: the
cases that had started (their oracle reached the ledger) and never finish are
listed by ``reag results --stuck`` and counted by the ledger's
``reag_cases_stuck{app}``, after the window ``REAG_LEDGER_STUCK_AFTER_S``.

``python -m bench.chaos broker-restart [--cases 60] [--window 20]``: a batch
sent, the broker killed (SIGKILL) at a random moment of its processing and started on
the same port, the topics created again and the tier-1 threshold published
again (as an operator does after ``reag up``), then a second batch of new
traffic. Printed: batch 1 in / completed / stuck (listed, and the gauge) / lost
before the ledger saw them; batch 2 in / out / missing / doubled. Exit status 1
if batch 2 loses or doubles a case, or the listing, the gauge and the ledger
disagree on how many are stuck.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
import time
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from bench.chaos.account import account
from bench.chaos.stack import (
    APP,
    ChaosStack,
    StackOptions,
    add_stack_options,
    chaos_stack,
    ledger_counts,
)
from bench.chaos.watch import Watcher
from services.kit.testing import run_tag


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.chaos broker-restart", description=__doc__
    )
    parser.add_argument("--cases", type=int, default=60, help="Cases per batch.")
    parser.add_argument("--rate", type=float, default=10.0, help="Batch 2's cases per second.")
    parser.add_argument("--window", type=float, default=20.0, help="REAG_LEDGER_STUCK_AFTER_S.")
    parser.add_argument("--seed", type=int, help="Fixes the moment of the restart.")
    add_stack_options(parser)
    return parser.parse_args(argv)


def stuck_listed(stack: ChaosStack, window: float) -> list[str]:
    """The case ids ``reag results --stuck --json`` prints for this store."""
    import typer

    from shell.cli import results as results_cli

    app = typer.Typer()
    results_cli.register(app)
    out = CliRunner().invoke(
        app, ["results", "--stuck", "--json", "--store", stack.dsn, "--window", str(window)]
    )
    return [row["case_id"] for row in json.loads(out.stdout)]


def stuck_gauge(stack: ChaosStack) -> float | None:
    spec = stack.specs["ledger"]
    with urllib.request.urlopen(f"http://127.0.0.1:{spec.port}/metrics", timeout=5) as r:
        text = r.read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "reag_cases_stuck" and sample.labels.get("app") == APP:
                return sample.value
    return None


async def restart_broker(stack: ChaosStack) -> float:
    """Kill -9 and start again on the same port; topics and the threshold as after `reag up`.
    Returns the seconds until every service reports the broker connected again."""
    stack.kill("broker")
    started = time.perf_counter()
    await stack.start_broker()
    await stack.publish_threshold()
    names = [n for n in stack.services if n != "model-server"]
    await asyncio.to_thread(stack.wait_healthy, names, 300.0)
    return time.perf_counter() - started


async def chaos(args: argparse.Namespace, workdir: Path) -> int:
    rng = random.Random(args.seed)
    options = StackOptions(
        workdir=workdir, store_dsn=args.store, kernel=args.kernel, stuck_after_s=args.window
    )
    with chaos_stack(options) as stack:
        started = time.perf_counter()
        await stack.start()
        print(f"  stack up in {time.perf_counter() - started:.0f} s ({workdir})", flush=True)
        first = [f"before-{run_tag()}-{i:03d}" for i in range(args.cases)]
        async with Watcher(stack.bootstrap) as watcher:
            warm = {f"warm-{run_tag(8)}"}
            await stack.send(sorted(warm))
            if not await watcher.wait_ended(warm, timeout_s=300):
                print("  the warm-up case did not finish in 300 s; see the logs", flush=True)
                return 1
            # Every case acknowledged by the broker, then the restart at a random moment of
            # their processing, so cases are lost at every stage.
            await stack.send(first)
            # The restart once a random few have finished: the rest are then at every stage.
            await watcher.wait_ended(
                set(first), timeout_s=300, until=rng.randint(1, max(1, args.cases // 3))
            )
            ended_before = watcher.ended(set(first))
        back_s = await restart_broker(stack)
        print(
            f"  broker restarted at a random moment of batch 1 ({len(ended_before)} of "
            f"{args.cases} cases ended before); every service connected again in {back_s:.0f} s",
            flush=True,
        )
        second = [f"after-{run_tag()}-{i:03d}" for i in range(args.cases)]
        async with Watcher(stack.bootstrap) as watcher:
            await stack.send(second, rate=args.rate)
            await watcher.wait_ended(set(second), timeout_s=args.timeout, stall_s=args.timeout)
            after = account(stack, watcher, set(second))
        # Let the window pass for every case of batch 1, and the ledger count once more.
        await asyncio.sleep(args.window + 3 * float(stack.env["REAG_LEDGER_STUCK_EVERY_S"]))
        ledger = ledger_counts(stack.dsn, set(first))
        started_cases = ledger.with_oracle
        unfinished = started_cases - ledger.complete
        listed = set(stuck_listed(stack, args.window)) & set(first)
        gauge = stuck_gauge(stack)
        never = set(first) - started_cases - ledger.complete
        print(
            f"broker restart, batch 1 (in flight): in {len(first)}, completed "
            f"{len(ledger.complete)}, stuck {len(unfinished)} (listed by reag results --stuck "
            f"{len(listed)}, reag_cases_stuck {gauge}), lost before the ledger saw them "
            f"{len(never)}"
        )
        print(f"broker restart, batch 2 (after): {after.line()}")
        agree = listed == unfinished and gauge == len(unfinished)
        if not agree:
            print("  the stuck listing, the gauge and the ledger disagree", flush=True)
        return 0 if after.ok and agree else 1


def run(argv: list[str]) -> int:
    args = parse(argv)
    if args.workdir is not None:
        return asyncio.run(chaos(args, args.workdir))
    with tempfile.TemporaryDirectory(prefix="reag-chaos-broker-") as tmp:
        return asyncio.run(chaos(args, Path(tmp)))
