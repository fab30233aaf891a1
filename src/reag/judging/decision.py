"""Accept or escalate: a judgement against the tier's calibrated threshold.

λ̂ was fit on temperature-scaled confidences when selective temperature
scaling was applied (paper 3.4.2), so the live confidence is scaled with the
same T before the comparison. No threshold means the tier accepts nothing:
a judge that was never calibrated, or whose calibration found no λ with a
bounded risk, must not issue verdicts.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from reag.calibration.temperature import apply_temperature
from reag.v1 import events_pb2 as pb


def effective_temperature(threshold: pb.Threshold) -> float:
    """proto3 reads an unset temperature as 0; that means "no scaling"."""
    return threshold.temperature if threshold.temperature > 0.0 else 1.0


def scaled_confidence(confidence: float, threshold: pb.Threshold | None) -> float:
    if threshold is None:
        return confidence
    return float(apply_temperature([confidence], effective_temperature(threshold))[0])


def accepts(confidence: float, threshold: pb.Threshold | None) -> bool:
    """c' ≥ λ̂ with c' = σ(logit(c)/T); False when there is no threshold."""
    if threshold is None or not threshold.has_threshold:
        return False
    return scaled_confidence(confidence, threshold) >= threshold.threshold


@dataclass(frozen=True, slots=True)
class ThresholdUpdate:
    """What applying one pb.Threshold did, so the caller can log and export it."""

    applied: bool
    reason: str


def threshold_key(app: str, tier: int) -> str:
    """The compacted topic's key: the latest message per key is the one in force."""
    return f"{app}/tier{tier}"


class ThresholdBook:
    """The thresholds one tier's judge holds, per app, updated while it runs.

    Thresholds for other tiers are ignored, and so are thresholds calibrated
    for a different model than this tier's: a λ̂ says nothing about another
    model's confidences. An update older than the one held (by computed_at)
    is ignored, so a republished or reordered old threshold cannot win.
    """

    def __init__(self, tier: int, model: str) -> None:
        self.tier = tier
        self.model = model
        self._lock = threading.Lock()
        self._by_app: dict[str, pb.Threshold] = {}

    def get(self, app: str) -> pb.Threshold | None:
        with self._lock:
            return self._by_app.get(app)

    def apps(self) -> list[str]:
        with self._lock:
            return sorted(self._by_app)

    def update(self, threshold: pb.Threshold) -> ThresholdUpdate:
        if threshold.tier != self.tier:
            return ThresholdUpdate(False, f"for tier {threshold.tier}, not {self.tier}")
        if threshold.model and threshold.model != self.model:
            return ThresholdUpdate(
                False,
                f"calibrated for model {threshold.model}, but this tier runs {self.model}; "
                "recalibrate with this tier's model",
            )
        with self._lock:
            held = self._by_app.get(threshold.app)
            if held is not None and (
                threshold.computed_at.ToNanoseconds() < held.computed_at.ToNanoseconds()
            ):
                return ThresholdUpdate(False, "older than the threshold in force")
            copy = pb.Threshold()
            copy.CopyFrom(threshold)
            self._by_app[threshold.app] = copy
        if threshold.has_threshold:
            return ThresholdUpdate(
                True, f"λ̂={threshold.threshold:g} (T={effective_temperature(threshold):g})"
            )
        return ThresholdUpdate(True, f"no threshold: {threshold.reason or 'no λ passed'}")
