"""A calibration run: read an expert-labelled set, judge, score, fit, record.

Used by ``reag calibrate --labels FILE``, the demo and the calibrator service,
all through one function, ``calibrate.run_calibration``, with a ``FitSpec``.

Why a package of its own: this is the one place that runs the tier judges
(``reag.judging``) on calibration items and feeds their scores to the
statistics (``reag.calibration``). Inside either of those it would make
them import each other; here the graph runs one way, calibration_run → judging →
calibration.

- ``files``: the labelled JSONL set, line by line;
- ``clients``: the tier judges and their LLM clients, built as the live ones;
- ``fitting``: what a fit is asked for (``FitSpec``) and the thresholds it gives;
- ``scoring``: each (tier, item) scored once, stored, reused;
- ``calibrate``: one app's whole run, recorded in the store's history.
"""
