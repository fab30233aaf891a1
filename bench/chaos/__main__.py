"""``python -m bench.chaos [step ...] [-- step options]``: the chaos steps, all when none named.

Each step is a module with ``run(argv) -> int`` that prints its counts; the
exit status is the worst step's. Options after a step's name go to that step,
e.g. ``python -m bench.chaos load --cases 200``.
"""

from __future__ import annotations

import importlib
import sys
import time

STEPS: dict[str, str] = {
    "load": "bench.chaos.load",
    "kill": "bench.chaos.kill",
    "broker-restart": "bench.chaos.broker_restart",
    "pg-outage": "bench.chaos.pg_outage",
    "llm-faults": "bench.chaos.llm_faults",
}


def main(argv: list[str]) -> int:
    plan: list[tuple[str, list[str]]] = []
    for arg in argv:
        if arg in STEPS:
            plan.append((arg, []))
        elif plan:
            plan[-1][1].append(arg)
        else:
            print(f"unknown step {arg!r}; steps: {', '.join(STEPS)}", file=sys.stderr)
            return 2
    worst = 0
    for name, args in plan or [(name, []) for name in STEPS]:
        module = importlib.import_module(STEPS[name])
        print(f"== chaos {name}", flush=True)
        started = time.perf_counter()
        code = int(module.run(args))
        print(
            f"== chaos {name}: exit {code} in {time.perf_counter() - started:.0f} s\n", flush=True
        )
        worst = max(worst, code)
    return worst


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
