"""The simulation of bench/trust.py, small: a stable judge rarely alarms, a jump is caught,
and recalibration on exchangeable audits restores the guarantee."""

from __future__ import annotations

import numpy as np
from scipy import stats

from reag.trust.simulation import (
    Scenario,
    first_alarms,
    recalibrate_after_alarm,
    streams,
    weights_sum_check,
)


def test_change_weights_sum_below_one() -> None:
    assert weights_sum_check(10_000) < 1.0


def test_stable_judge_at_alpha_rarely_alarms() -> None:
    s = Scenario(n_audits=1500, risk_before=0.1, risk_after=None)
    c, w = streams(np.random.default_rng(21), s, 400)
    fired = first_alarms(c >= s.threshold, w, s.alpha, s.delta) >= 0
    assert fired.sum() <= stats.binom.ppf(0.999, 400, s.delta)


def test_jump_is_caught_and_recalibration_restores_the_guarantee() -> None:
    s = Scenario(n_audits=2500, change_at=800, n_recalibration=1000)
    c, w = streams(np.random.default_rng(22), s, 100)
    fired = first_alarms(c >= s.threshold, w, s.alpha, s.delta)
    assert (fired >= s.change_at).mean() > 0.9
    runs = recalibrate_after_alarm(np.random.default_rng(23), s, 60)
    refit = [r for r in runs if r.threshold is not None]
    assert refit, "some runs must find a threshold on 1,000 exchangeable audits"
    assert sum(r.true_risk > s.alpha for r in runs) <= stats.binom.ppf(0.999, 60, s.delta)
