"""The defaults of a threshold fit, stated once: the library, ``reag calibrate``, the
calibrator service and the demo all read them from here.

Plain numbers and text with no imports, so the CLI can show them in ``--help``
without loading numpy and scipy. ``reag.calibration_run.fitting.FitSpec`` is the
one carrier of a fit's parameters; these are its defaults.
"""

from __future__ import annotations

from typing import Final

DEFAULT_ALPHA: Final = 0.1
"""Tolerated disagreement rate among accepted verdicts, per tier: ``reag calibrate`` and the
calibrator service (REAG_ALPHA) fit at this α unless told otherwise."""

LOCAL_ALPHA: Final = 0.30
"""The demo's α: the smallest the local cascade meets on the example's labelled set with room
to accept something (bench.verdicts, docs/calibration.md); hosted judges meet 0.15."""

DEFAULT_DELTA: Final = 0.1
"""Allowed probability that the risk bound fails."""

DEFAULT_TAU: Final = 5
"""Temperature-scale a tier that accepts fewer calibration items than this (0: off)."""

DEFAULT_GRID: Final = "0.999:0.5:0.001"
"""Candidate thresholds START:STOP:STEP, tested from the most confident down."""

DEFAULT_MIN_ACCEPTED: Final = 30
"""Candidates accepting fewer calibration items are not tested (Trust or Escalate's rule)."""
