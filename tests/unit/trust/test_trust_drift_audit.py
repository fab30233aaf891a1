"""Drift tests on their schedule, the audit pick, and the trust report's states."""

from __future__ import annotations

import numpy as np
from scipy import stats

from reag.trust.audit import audit_draw, is_audit
from reag.trust.drift import look_level, look_schedule, scheduled_checks
from reag.trust.monitor import LabelledScores, TierScore, risk_report, trust_report
from reag.v1 import events_pb2 as pb


def test_schedule_spends_at_most_delta() -> None:
    assert look_schedule(250) == [25, 50, 100, 200]
    assert sum(look_level(k, 0.1) for k in range(1, 10_000)) < 0.1


def test_confidence_drift_false_alarms_at_most_delta_over_every_look() -> None:
    rng = np.random.default_rng(11)
    runs, delta = 400, 0.1
    alarms = 0
    for _ in range(runs):
        calibration = rng.uniform(0.5, 1, 200).tolist()
        live = rng.uniform(0.5, 1, 800).tolist()
        checks = scheduled_checks("confidence", calibration, live, delta)
        assert [c.n_live for c in checks] == [25, 50, 100, 200, 400, 800]
        alarms += any(c.alarmed for c in checks)
    assert alarms <= stats.binom.ppf(0.999, runs, delta)


def test_drift_is_caught_in_confidence_and_mix() -> None:
    rng = np.random.default_rng(12)
    calibration = rng.uniform(0.5, 1, 200).tolist()
    live = rng.uniform(0.5, 0.8, 200).tolist()
    assert any(c.alarmed for c in scheduled_checks("confidence", calibration, live, 0.1))
    personas = ["a", "b"] * 100
    assert not any(c.alarmed for c in scheduled_checks("persona", personas, personas, 0.1))
    shifted = (["a"] * 9 + ["b"]) * 20
    assert any(c.alarmed for c in scheduled_checks("persona", personas, shifted, 0.1))


def test_audits_are_a_fixed_uniform_share() -> None:
    ids = [f"case-{i}/c{j}" for i in range(4000) for j in range(5)]
    share = np.mean([is_audit(i, 0.02) for i in ids])
    assert abs(share - 0.02) < 0.004
    assert [is_audit(i, 0.02) for i in ids[:500]] == [is_audit(i, 0.02) for i in ids[:500]]
    assert stats.kstest([audit_draw(i) for i in ids[:5000]], "uniform").pvalue > 0.001
    assert not any(is_audit(i, 0.0) for i in ids[:100])
    assert all(is_audit(i, 1.0) for i in ids[:100])


def test_risk_report_states() -> None:
    assert risk_report("1", [], 0.1, 0.1).state == "insufficient"
    assert risk_report("1", [False] * 20, 0.1, 0.1).state == "insufficient"
    within = risk_report("1", [False] * 60, 0.1, 0.1)
    assert within.state == "within"
    assert within.bound <= 0.1
    bad = risk_report("1", [False] * 200 + [True, False, False] * 60, 0.1, 0.1)
    assert bad.state == "exceeded"
    assert bad.bound > 0.1
    assert bad.alarmed_at is not None


def _item(i: int, c1: float, v1: str, c2: float, v2: str, label: str) -> LabelledScores:
    return LabelledScores(
        f"x{i}",
        label,
        "p",
        "pass",
        (TierScore(1, v1, c1), TierScore(2, v2, c2)),
    )


def test_trust_report_routes_audits_to_their_deciding_tier() -> None:
    thresholds = {
        1: pb.Threshold(tier=1, has_threshold=True, threshold=0.9),
        2: pb.Threshold(tier=2, has_threshold=True, threshold=0.7),
    }
    audits = [
        _item(0, 0.95, "YES", 0.99, "YES", "YES"),  # tier 1, right
        _item(1, 0.95, "YES", 0.99, "NO", "NO"),  # tier 1, wrong
        _item(2, 0.5, "YES", 0.8, "NO", "NO"),  # tier 2, right
        _item(3, 0.5, "YES", 0.6, "NO", "NO"),  # abstained
    ]
    report = trust_report("app", audits, audits, thresholds, 2, alpha=0.1, delta=0.1)
    assert (report.risks["1"].audits, report.risks["1"].disagreements) == (2, 1)
    assert (report.risks["2"].audits, report.risks["2"].disagreements) == (1, 0)
    assert (report.risks["all"].audits, report.risks["all"].disagreements) == (3, 1)
    assert report.abstained == 1
    assert report.drift[2].live == 2
    assert report.drift[1].live == 4
