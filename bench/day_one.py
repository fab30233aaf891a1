"""Day one, simulated: a pooled threshold on apps it was not fit on, certified or withdrawn.

The pool is the example's 233 expert-labelled items with the committed scores of
the local default judge (tier 1, Qwen2.5-Coder 1.5B, prompt v4, N=1 K=3); the
pooled threshold is fitted on all of them at α = 0.30, δ = 0.1 (the demo's fit).
A simulated app draws its audits from the pool's items, every item equally
likely except the ones the judge gets wrong, which are ``h`` times as likely:
h = 1 is an app like the pool, h > 1 a harder one. Its true risk among the
verdicts the pooled threshold accepts follows from h. Every app's audits run
through ``reag.trust.provisional`` for REAG_BENCH_DAY_ONE_AUDITS audits
(default 2,000) in REAG_BENCH_DAY_ONE_RUNS streams (default 1,000, seeded by
REAG_BENCH_SEED). Printed per app: how often the threshold is certified and
withdrawn within the horizon, after how many audits (median and 90th
percentile, every labelled audit counted), and the rates that must stay ≤ δ:
certification of a threshold whose true risk is above α, withdrawal of one
whose risk is at or below α. Then what labelling costs at the default audit
rate and at a higher provisional one.

The pool is one app, reweighted: the issue's leave-one-app-out pool needs
criterion-level labels on other apps, which do not exist yet.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from reag.calibration.bounds import clopper_pearson_interval
from reag.calibration.fixed_sequence import fit_threshold
from reag.calibration.scores import pivot, read_scores
from reag.fit_defaults import DEFAULT_DELTA, LOCAL_ALPHA
from reag.trust.audit import DEFAULT_AUDIT_RATE
from reag.trust.provisional import first_certified, first_withdrawn, least_abstention

SCORES = (
    Path(__file__).resolve().parents[1]
    / "examples/nutrition/scores"
    / "qwen2.5-coder-1.5b-instruct.judge-prompt-v4.n1k3s0.c870f0489f95313e.jsonl"
)
TARGET_RISKS = (0.10, 0.20, 0.25, 0.30, 0.35, 0.40, 0.50)
PROVISIONAL_AUDIT_RATE = 0.10


def pool(path: Path = SCORES) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Tier 1's confidence and wrongness on every pooled item."""
    table = pivot([r for r in read_scores(path) if r.tier == 1], n_tiers=1)
    return table.confidence[:, 0], table.wrong[:, 0]


def hardness_for(risk: float, accepted: NDArray[np.bool_], wrong: NDArray[np.bool_]) -> float:
    """The weight h on wrong items that makes the accepted items' risk ``risk``."""
    w = float((accepted & wrong).sum())
    r = float((accepted & ~wrong).sum())
    return risk * r / ((1.0 - risk) * w)


def app_streams(
    rng: np.random.Generator,
    accepted: NDArray[np.bool_],
    wrong: NDArray[np.bool_],
    h: float,
    *,
    shape: tuple[int, int],
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """(runs × audits) draws of the pool's items, wrong ones ``h`` times as likely."""
    weight = np.where(wrong, h, 1.0)
    draws = rng.choice(accepted.size, size=shape, p=weight / weight.sum())
    return accepted[draws], wrong[draws]


def _share(hits: int, runs: int) -> str:
    low, high = clopper_pearson_interval(hits, runs)
    return f"{hits}/{runs} [{low:.3f}, {high:.3f}]"


def _quantiles(at: NDArray[np.int64]) -> str:
    done = at[at >= 0] + 1  # 1-based: audits labelled up to and including the decisive one
    if done.size == 0:
        return "-"
    p50, p90 = np.percentile(done, (50, 90))
    return f"{p50:.0f} / {p90:.0f}"


def run() -> None:
    runs = int(os.environ.get("REAG_BENCH_DAY_ONE_RUNS", "1000"))
    horizon = int(os.environ.get("REAG_BENCH_DAY_ONE_AUDITS", "2000"))
    rng = np.random.default_rng(int(os.environ.get("REAG_BENCH_SEED", "0")))
    alpha, delta = LOCAL_ALPHA, DEFAULT_DELTA
    confidence, wrong = pool()
    fit = fit_threshold(confidence, wrong, alpha=alpha, delta=delta)
    if fit.threshold is None:
        print(f"the pool gives no threshold at α = {alpha}: {fit.reason}")
        return
    accepted = confidence >= fit.threshold
    print(
        f"pool: {confidence.size} items, λ = {fit.threshold:.3f} accepts "
        f"{accepted.mean():.1%}, risk among accepted {wrong[accepted].mean():.3f}; "
        f"α = {alpha}, δ = {delta}; {runs} streams of {horizon} audits per app"
    )
    print(
        "| app's true risk among accepted | h | all-criteria error μ | least abstention "
        "| certified | audits to certify (p50 / p90) | withdrawn | audits to withdraw "
        "(p50 / p90) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    false_cert = false_withdraw = right = wrong_apps = 0
    started = time.perf_counter()
    for target in TARGET_RISKS:
        h = hardness_for(target, accepted, wrong)
        mu = float(h * wrong.sum() / (h * wrong.sum() + (~wrong).sum()))
        acc, bad = app_streams(rng, accepted, wrong, h, shape=(runs, horizon))
        withdrawn = first_withdrawn(acc, bad, alpha, delta)
        certified = first_certified(acc, bad, alpha, delta)
        # A certification counts only if no withdrawal came first (``standing`` stops there).
        certified = np.where((withdrawn >= 0) & (withdrawn <= certified), -1, certified)
        n_cert, n_with = int((certified >= 0).sum()), int((withdrawn >= 0).sum())
        if target > alpha:
            false_cert += n_cert
            wrong_apps += runs
        else:
            false_withdraw += n_with
            right += runs
        print(
            f"| {target:.2f}{' (> α)' if target > alpha else ''} | {h:.2f} | {mu:.2f} | "
            f"{least_abstention(mu, alpha):.0%} | {_share(n_cert, runs)} | "
            f"{_quantiles(certified)} | {_share(n_with, runs)} | {_quantiles(withdrawn)} |"
        )
    print(
        f"false certification (true risk > α, certified): {_share(false_cert, wrong_apps)}; "
        f"false withdrawal (true risk ≤ α, withdrawn): {_share(false_withdraw, right)}; "
        f"each allowed δ = {delta} per app; {time.perf_counter() - started:.1f} s"
    )
    for rate in (DEFAULT_AUDIT_RATE, PROVISIONAL_AUDIT_RATE):
        print(
            f"at an audit rate of {rate:.0%}, {horizon} audits are {horizon / rate:,.0f} "
            f"criteria of traffic, and every 100 audits {100 / rate:,.0f} criteria"
        )


if __name__ == "__main__":
    run()
