"""``python -m bench [name ...] [--option ...]``: run every benchmark module (or the named ones).

Options after the names go to each named module's ``main(argv)`` (for
instance ``python -m bench retrieval --manifest APP.yaml --bench BENCH.yaml``).

Modules are listed here in order; one that does not exist yet is skipped, so
benchmarks can join as their parts of reag land.
"""

from __future__ import annotations

import importlib
import sys
import time

MODULES = (
    "bench.llm",
    "bench.retrieval",
    "bench.scoring",
    "bench.verdicts",
    "bench.generation",
    "bench.cascade",
    "bench.recorder",
    "bench.redaction",
    "bench.trust",
    "bench.trust_stack",
    "bench.day_one",
    "bench.pipeline",
    "bench.injection",
    "bench.cases",
    "bench.injection_detector",
    "bench.decidability",
)


def main(argv: list[str]) -> int:
    first_option = next((i for i, a in enumerate(argv) if a.startswith("-")), len(argv))
    argv, options = argv[:first_option], argv[first_option:]
    wanted = {f"bench.{name.removeprefix('bench.')}" for name in argv}
    for name in MODULES:
        if wanted and name not in wanted:
            continue
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            print(f"== {name}: not present, skipped\n", flush=True)
            continue
        title = (module.__doc__ or name).strip().splitlines()[0]
        print(f"== {name}: {title}", flush=True)
        started = time.perf_counter()
        if options:
            if not hasattr(module, "main"):
                print(f"{name} takes no options: {' '.join(options)}", file=sys.stderr)
                return 2
            module.main(options)
        else:
            module.run()
        print(f"== {name} done in {time.perf_counter() - started:.0f} s\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
