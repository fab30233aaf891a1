"""calibrator: expert reviews in, recalibrated thresholds out (paper 3.4.2, issue 4)."""
