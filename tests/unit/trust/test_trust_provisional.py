"""A borrowed threshold is certified or withdrawn by the app's audits, each wrongly at most δ."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats

from reag.trust.provisional import (
    first_certified,
    first_withdrawn,
    labels_to_certify,
    least_abstention,
    standing,
)
from reag.trust.sequence import upper_bound

RUNS = 1000
ALPHA, DELTA = 0.3, 0.1


def allowed(runs: int, delta: float) -> int:
    """The 99.9 % quantile of Bin(runs, δ): more than this means a broken guarantee."""
    return int(stats.binom.ppf(0.999, runs, delta))


def streams(
    seed: int, risk: float, n: int, share_accepted: float = 0.6
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    rng = np.random.default_rng(seed)
    accepted = rng.random((RUNS, n)) < share_accepted
    wrong = rng.random((RUNS, n)) < risk
    return accepted, wrong


@pytest.mark.parametrize("risk", [0.32, 0.36])
def test_a_threshold_wrong_for_the_app_is_rarely_certified(risk: float) -> None:
    """True risk above α: certified anywhere in a long stream in at most δ of streams."""
    accepted, wrong = streams(int(risk * 100), risk, 1500)
    certified = first_certified(accepted, wrong, ALPHA, DELTA) >= 0
    assert certified.sum() <= allowed(RUNS, DELTA)


@pytest.mark.parametrize("risk", [0.2, 0.3])
def test_a_threshold_right_for_the_app_is_rarely_withdrawn(risk: float) -> None:
    """True risk at or below α: withdrawn anywhere in a long stream in at most δ of streams."""
    accepted, wrong = streams(int(risk * 1000), risk, 1500)
    withdrawn = first_withdrawn(accepted, wrong, ALPHA, DELTA) >= 0
    assert withdrawn.sum() <= allowed(RUNS, DELTA)


def test_clear_cases_settle_both_ways() -> None:
    """Far from α, nearly every stream settles: a good app certified, a bad one withdrawn."""
    good_acc, good_wrong = streams(1, 0.1, 800)
    assert (first_certified(good_acc, good_wrong, ALPHA, DELTA) >= 0).mean() > 0.95
    bad_acc, bad_wrong = streams(2, 0.6, 800)
    assert (first_withdrawn(bad_acc, bad_wrong, ALPHA, DELTA) >= 0).mean() > 0.95


def test_the_walk_agrees_with_the_vectorised_streams() -> None:
    """``standing`` (one app, audit by audit) and the simulation's arrays tell the same story."""
    rng = np.random.default_rng(7)
    for risk in (0.1, 0.3, 0.6):
        for _ in range(20):
            accepted = rng.random(300) < 0.5
            wrong = rng.random(300) < risk
            cert = int(first_certified(accepted[None], wrong[None], ALPHA, DELTA)[0])
            withdraw = int(first_withdrawn(accepted[None], wrong[None], ALPHA, DELTA)[0])
            s = standing(list(zip(accepted.tolist(), wrong.tolist(), strict=True)), ALPHA, DELTA)
            assert s.withdrawn_at == (withdraw + 1 if withdraw >= 0 else None)
            if s.standing == "withdrawn":
                assert s.audits == withdraw + 1
            expect_cert = cert + 1 if cert >= 0 and (withdraw < 0 or cert < withdraw) else None
            assert s.certified_at == expect_cert
            want = "withdrawn" if withdraw >= 0 else "certified" if cert >= 0 else "provisional"
            assert s.standing == want


def test_audits_the_threshold_did_not_accept_count_as_work_only() -> None:
    agreeing = [(True, False)] * 30
    with_rejected = [(False, True)] * 30 + agreeing
    a, b = standing(agreeing, ALPHA, DELTA), standing(with_rejected, ALPHA, DELTA)
    assert (a.accepted, a.disagreements) == (b.accepted, b.disagreements) == (30, 0)
    assert b.audits == 60
    assert a.bound == b.bound


def test_labels_to_certify_is_the_least_that_would_do() -> None:
    n = labels_to_certify(0, 0, ALPHA, DELTA)
    assert n is not None
    assert upper_bound(0, n, DELTA) <= ALPHA < upper_bound(0, n - 1, DELTA)
    already = labels_to_certify(200, 20, ALPHA, DELTA)  # μ̂ = 0.1 on 200: already enough
    assert already == 200
    assert upper_bound(20, 200, DELTA) <= ALPHA
    needed = labels_to_certify(20, 2, ALPHA, DELTA)  # μ̂ = 0.1 on 20: not yet
    assert needed is not None
    assert needed > 20
    assert upper_bound(round(0.1 * needed), needed, DELTA) <= ALPHA
    assert all(
        upper_bound(round(0.1 * m), m, DELTA) > ALPHA for m in range(20, needed) if m % 10 == 0
    )
    assert labels_to_certify(100, 35, ALPHA, DELTA) is None  # μ̂ above α: never at this rate


def test_least_abstention() -> None:
    assert least_abstention(0.2, 0.3) == 0.0
    assert least_abstention(0.44, 0.3) == pytest.approx(0.2)
    with pytest.raises(ValueError, match="alpha"):
        least_abstention(0.2, 1.0)
