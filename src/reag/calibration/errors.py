"""Errors of the calibration statistics, each telling the user what to fix."""

from __future__ import annotations

from collections.abc import Sequence


class CalibrationError(Exception):
    """Base of every error raised by ``reag.calibration``."""


class ScoreFileError(CalibrationError):
    """A scores JSONL file could not be read; the message names the file and line."""


class MissingScoreError(CalibrationError):
    """Routing sent items to a tier that has no score for them."""

    def __init__(self, tier: int, item_ids: Sequence[str]) -> None:
        shown = ", ".join(repr(i) for i in item_ids[:5])
        more = f" and {len(item_ids) - 5} more" if len(item_ids) > 5 else ""
        super().__init__(
            f"tier {tier} has no score for item(s) {shown}{more}, but routing sends them "
            f"there; add a record with tier={tier} for each (or calibrate in cascade mode, "
            "which needs a tier's scores only for the items lower tiers did not accept)"
        )
        self.tier = tier
        self.item_ids = tuple(item_ids)


class InvalidRangeError(CalibrationError):
    """A range or list given on the command line (alphas, grid, tier costs) is malformed."""
