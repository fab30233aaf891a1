"""Cases that started and never finished: how long is too long, and the gauge that counts them.

Delivery is at-least-once, so a case whose oracle reached the ledger completes
unless events were lost: the embedded broker keeps topics in memory and loses
everything in flight when it restarts, and a bug can drop a criterion. The
ledger counts such cases per app in ``reag_cases_stuck`` every
``ledger_stuck_every_s``; ``reag results --stuck`` lists them.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import Field

from reag import metrics
from reag.settings import ReagSettings


class StuckSettings(ReagSettings):
    ledger_stuck_after_s: float = Field(
        default=3600.0,
        gt=0,
        description=(
            "Seconds after its oracle reached the ledger that an incomplete case counts as "
            "stuck. Keep it above the slowest case's judging time (minutes on local models "
            "behind a queue), or slow cases are reported as lost."
        ),
    )
    ledger_stuck_every_s: float = Field(
        default=60.0,
        gt=0,
        description="Seconds between the ledger's counts of stuck cases (reag_cases_stuck).",
    )


class StuckGauge:
    """Keeps ``reag_cases_stuck{app}``: an app whose cases all finished goes back to 0."""

    def __init__(self) -> None:
        self._apps: set[str] = set()

    def set(self, counts: Mapping[str, int]) -> None:
        for app in self._apps - set(counts):
            metrics.CASES_STUCK.labels(app).set(0)
        for app, n in counts.items():
            metrics.CASES_STUCK.labels(app).set(n)
        self._apps |= set(counts)
