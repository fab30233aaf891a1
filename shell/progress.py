"""One progress bar per tier for long scoring runs: done, total, rate and time left.

Scoring a labelled set takes minutes to an hour on a laptop; a line per item
floods the terminal and a line every so often says nothing about when it
ends. ``tier_bars`` gives ``reag.calibration_run.scoring`` the callback it reports
to and draws a rich progress bar per tier, on stderr so JSON on stdout stays
clean.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from reag.calibration_run.scoring import Progress as ScoringProgress


@contextmanager
def tier_bars(*, enabled: bool = True, label: str = "scoring") -> Iterator[ScoringProgress]:
    """A scoring callback drawing one bar per tier; a no-op when ``enabled`` is False."""
    if not enabled:
        yield lambda _tier, _done, _total: None
        return
    bars = Progress(
        TextColumn("  {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
    )
    tasks: dict[int, TaskID] = {}

    def report(tier: int, done: int, total: int) -> None:
        if tier not in tasks:
            tasks[tier] = bars.add_task(f"{label} tier {tier}", total=total)
        bars.update(tasks[tier], completed=done, total=total)

    with bars:
        yield report
