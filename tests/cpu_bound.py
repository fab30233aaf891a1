"""A CPU-time bound for the hostile-input tests: the one declared exception to "tests never
assert times" (issue 23), far above what the bounded patterns take and far below what the
old quadratic e-mail pattern took (half an hour of CPU for 1 MiB)."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

import pytest

CPU_BOUND_S = 10.0


class CpuSpentError(Exception):
    """Raised by the profiling timer inside the code under test when the bound is spent."""


@contextmanager
def within_cpu(what: str, bound_s: float = CPU_BOUND_S) -> Iterator[None]:
    """Fails the test when the block uses more than ``bound_s`` of CPU.

    The block is interrupted at the bound (``ITIMER_PROF`` counts CPU; the regex engine
    checks for signals), so a regression fails the test instead of hanging it.
    """

    def spent(_signum: int, _frame: FrameType | None) -> None:
        raise CpuSpentError

    previous = signal.signal(signal.SIGPROF, spent)
    signal.setitimer(signal.ITIMER_PROF, bound_s)
    start = time.process_time()
    try:
        yield
    except CpuSpentError:
        pytest.fail(f"{what} took over {bound_s} s of CPU")
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
    assert time.process_time() - start < bound_s, f"{what} took over {bound_s} s of CPU"
