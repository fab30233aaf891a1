"""Count in = count out: how each case of a chaos run ended, from the ledger and the topics."""

from __future__ import annotations

import urllib.request
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from bench.chaos.stack import ChaosStack, ledger_counts
from bench.chaos.watch import Watcher


@dataclass(frozen=True)
class Account:
    cases_in: int
    results: int  # complete results in the ledger
    dead_letters: int  # cases with a dead letter and no complete result
    both: int  # a complete result and a dead letter: not exactly one end
    missing: int  # neither
    doubled: int  # more than one ledger row for the case, or more criterion rows than criteria
    republished: int  # cases whose result went out more than once (at-least-once, keyed)
    stuck: int  # missing cases whose oracle is in the ledger: `reag results --stuck` lists them

    @property
    def ok(self) -> bool:
        return self.missing == 0 and self.doubled == 0 and self.both == 0

    def line(self) -> str:
        return (
            f"cases in {self.cases_in}, out {self.results + self.dead_letters} "
            f"({self.results} results, {self.dead_letters} dead letters), "
            f"missing {self.missing}, doubled {self.doubled}, both {self.both}; "
            f"results republished {self.republished}"
        )


def account(stack: ChaosStack, watcher: Watcher, cases: set[str]) -> Account:
    ledger = ledger_counts(stack.dsn, cases)
    dead = set(watcher.seen.dead).intersection(cases)
    results = ledger.complete
    missing = cases - results - dead
    return Account(
        cases_in=len(cases),
        results=len(results),
        dead_letters=len(dead - results),
        both=len(dead & results),
        missing=len(missing),
        doubled=len(ledger.doubled(cases)),
        republished=sum(1 for c in cases if watcher.seen.results.get(c, 0) > 1),
        stuck=len(missing & ledger.with_oracle),
    )


def stage_work(stack: ChaosStack) -> dict[str, tuple[int, float, float]]:
    """Per service from its /metrics: events handled, mean and p95 (bucket bound) seconds of
    ``reag_stage_seconds``, the handler's own time without the queue."""
    out: dict[str, tuple[int, float, float]] = {}
    for name in stack.services:
        spec = stack.specs[name]
        if spec.health_path != "/healthz" or name == "model-server":
            continue
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{spec.port}/metrics", timeout=5) as r:
                text = r.read().decode()
        except OSError:
            continue
        buckets: list[tuple[float, float]] = []
        total = count = 0.0
        for family in text_string_to_metric_families(text):
            if family.name != "reag_stage_seconds":
                continue
            for sample in family.samples:
                if sample.name.endswith("_bucket"):
                    buckets.append((float(sample.labels["le"]), sample.value))
                elif sample.name.endswith("_sum"):
                    total += sample.value
                elif sample.name.endswith("_count"):
                    count += sample.value
        if not count:
            continue
        buckets.sort()
        p95 = next((le for le, n in buckets if n >= 0.95 * count), float("inf"))
        out[name] = (int(count), total / count, p95)
    return out
