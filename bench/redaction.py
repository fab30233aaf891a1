"""Benchmark: CPU seconds the redactor spends on 1 MiB of pathological text per pattern family.

Each payload is built to make its family's pattern work hardest: long runs
of the characters a pattern accepts that never complete a match (``"a" * n +
"@"`` took the old e-mail pattern half an hour at 1 MiB), separators that
make every position a start, characters that normalisation must map or strip.
Timed with ``time.process_time`` (CPU, not wall clock), one run each. The goal
(issue 23): under 1 s per family at every way in; ``tests/unit/traffic/
test_redaction_hostile.py`` asserts 10 s, far above the figure and far below
the old pattern's.

``python -m bench redaction [--bytes N]`` prints one line per family.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from reag.traffic.redaction import Redactor

MIB = 1_048_576


def _fill(unit: str, size: int, tail: str = "") -> str:
    """``unit`` repeated to ``size`` bytes of UTF-8, then ``tail``."""
    per = len(unit.encode())
    return unit * max(1, (size - len(tail.encode())) // per) + tail


PATHOLOGICAL: dict[str, Callable[[int], str]] = {
    "email": lambda n: _fill("a", n, "@"),
    "email_labels": lambda n: _fill("a@" + "b" * 62 + ".", n),
    "email_dots": lambda n: _fill("a.", n, "@x"),
    "card": lambda n: _fill("1", n),
    "card_spaced": lambda n: _fill("1 ", n),
    "card_dotted": lambda n: _fill("1234.", n),
    "iban": lambda n: _fill("ab12 ", n),
    "nino": lambda n: _fill("ab 12 34 ", n),
    "dob": lambda n: _fill("born on 12/", n),
    "ip": lambda n: _fill("1.", n),
    "ipv6": lambda n: _fill("a:", n),
    "phone": lambda n: _fill("+1 (", n),
    "invisible": lambda n: _fill("4\u200b", n),
    "fullwidth": lambda n: _fill("\uff14", n),
}
"""Family -> a payload of about ``n`` bytes of UTF-8."""


def cpu_seconds(text: str, redactor: Redactor | None = None) -> float:
    """CPU seconds ``redactor.text(text)`` takes (the default policy when None)."""
    redactor = redactor or Redactor()
    start = time.process_time()
    redactor.text(text)
    return time.process_time() - start


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench redaction")
    parser.add_argument("--bytes", type=int, default=MIB, help="payload size (default 1 MiB)")
    args = parser.parse_args(argv)
    redactor = Redactor()
    print(f"redaction: CPU seconds per {args.bytes}-byte pathological payload (goal < 1 s)")
    worst = 0.0
    for family, build in PATHOLOGICAL.items():
        seconds = cpu_seconds(build(args.bytes), redactor)
        worst = max(worst, seconds)
        print(f"  {family:<14} {seconds:7.3f} s")
    print(f"  {'worst':<14} {worst:7.3f} s")
    return 0


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
