"""Recalibration: what the calibrator does with each expert review, without Kafka.

A reviewed criterion joins the calibration set; a labelled audit joins the
trust monitor's stream; every M new exchangeable labels the app is
recalibrated (``reag.calibration_run.calibrate.run_calibration``, the same run
``reag calibrate --labels`` makes) and a new trust epoch begins. The
calibrator service (services/calibrator) only decodes reviews, calls
``Recalibrator.on_review`` and publishes the thresholds it returns.

- ``recalibrator``: ``Recalibrator``, the policy and its state (the store).
- ``day_one``: thresholds a new app borrows from another, certified or withdrawn by its
  own audits (issue 26).
"""

from reag.recalibration.recalibrator import Recalibrator

__all__ = ["Recalibrator"]
