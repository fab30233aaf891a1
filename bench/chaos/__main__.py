"""``python -m bench.chaos [step ...]``: fault runs that print counts (cases in / out / doubled).

Each step is a module with ``run(argv)``; ``STEPS`` names them in the order
``make chaos`` runs them. A step's own options follow its name, e.g.
``python -m bench.chaos pg-outage --outage-s 10``. Steps start what they need
(an embedded broker of their own, a schema of their own on the machine's
PostgreSQL behind a proxy they can cut) and remove it afterwards.
"""

from __future__ import annotations

import importlib
import sys
import time

# One line per step: add new steps here.
STEPS: dict[str, str] = {
    "pg-outage": "bench.chaos.pg_outage",
    "llm-faults": "bench.chaos.llm_faults",
}


def _split(argv: list[str]) -> list[tuple[str, list[str]]]:
    """``[step, options...]...`` into steps with their own options; no step: every step."""
    chosen: list[tuple[str, list[str]]] = []
    for arg in argv:
        if arg in STEPS:
            chosen.append((arg, []))
        elif chosen:
            chosen[-1][1].append(arg)
        else:
            raise SystemExit(f"unknown chaos step {arg!r}; steps: {', '.join(STEPS)}")
    return chosen or [(name, []) for name in STEPS]


def main(argv: list[str]) -> int:
    for name, options in _split(argv):
        module = importlib.import_module(STEPS[name])
        title = (module.__doc__ or name).strip().splitlines()[0]
        print(f"== chaos {name}: {title}", flush=True)
        started = time.perf_counter()
        module.run(options)
        print(f"== chaos {name} done in {time.perf_counter() - started:.0f} s\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
