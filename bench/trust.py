"""Trust in production, simulated: false alarms of a stable judge, detection delay, recalibration.

The judge and the stream are reag.trust.simulation's (confidence uniform on
[0.5, 1), threshold λ = 0.8 in force, accepting 40 % of criteria). α = 0.1,
δ = 0.1. A stream is 4,000 audits, which at the default audit rate of 2 % is
200,000 criteria. Printed, per scenario, over REAG_BENCH_TRUST_RUNS runs
(default 1,000, seeded by REAG_BENCH_SEED, default 0):

1. stable judges (true risk among accepted criteria α/2 = 0.05, and α = 0.10,
   the worst case the promise allows): the share of runs in which the
   detector raised an alarm anywhere in the stream (should be ≤ δ), with its
   exact 95 % interval, and how many audits the live bound needed to reach
   the state "within" (bound ≤ α);
2. a judge whose risk jumps from α/2 to 2α at audit 2,000: the share of runs
   caught, false alarms before the jump, and the detection delay after the
   jump in audits (and criteria at 2 %), as quantiles;
3. recalibration after each alarm, on the next 1,000 audits (exchangeable
   labels: every audited criterion, not only abstentions): the share of
   runs that found a threshold, the share whose new threshold's true risk
   exceeds α (should be ≤ δ), the coverage kept, and false alarms in the
   new epoch over the rest of the stream.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np
from numpy.typing import NDArray

from reag.calibration.bounds import clopper_pearson_interval
from reag.trust.sequence import log_mixture_below
from reag.trust.simulation import Scenario, first_alarms, recalibrate_after_alarm, streams


def _share(hits: int, runs: int) -> str:
    low, high = clopper_pearson_interval(hits, runs)
    return f"{hits}/{runs} = {hits / runs:.3f} [95 % CI {low:.3f}, {high:.3f}]"


def _first_within(
    accepted: NDArray[np.bool_], wrong: NDArray[np.bool_], alpha: float, delta: float
) -> NDArray[np.int64]:
    """Per run, the audit index at which the live bound first fell to α (−1: never)."""
    n = np.cumsum(accepted, axis=1)
    k = np.cumsum(accepted & wrong, axis=1)
    # bound ≤ α ⟺ the mixture against α has reached 1/δ (reag.trust.sequence)
    done = (log_mixture_below(k, n, alpha) >= math.log(1 / delta)) & (n > 0)
    return np.where(done.any(axis=1), np.argmax(done, axis=1), -1)


def run() -> None:
    runs = int(os.environ.get("REAG_BENCH_TRUST_RUNS", "1000"))
    rng = np.random.default_rng(int(os.environ.get("REAG_BENCH_SEED", "0")))
    base = Scenario()
    print(
        f"α={base.alpha} δ={base.delta}; stream {base.n_audits} audits "
        f"(= {base.n_audits / base.audit_rate:,.0f} criteria at a {base.audit_rate:.0%} audit "
        f"rate); λ={base.threshold} accepts {(1 - base.threshold) / 0.5:.0%} of criteria; "
        f"{runs} runs per scenario"
    )
    for risk in (base.alpha / 2, base.alpha):
        started = time.perf_counter()
        s = Scenario(risk_before=risk, risk_after=None)
        c, w = streams(rng, s, runs)
        any_alarm = first_alarms(c >= s.threshold, w, s.alpha, s.delta) >= 0
        within = _first_within(c >= s.threshold, w, s.alpha, s.delta)
        print(
            f"stable judge, true risk {risk:.2f}: false alarm over the whole stream in "
            f"{_share(int(any_alarm.sum()), runs)} (allowed δ = {s.delta}); "
            f"{time.perf_counter() - started:.0f} s"
        )
        reached = within[within >= 0]
        print(
            f"  state 'within' (bound ≤ α) reached in {_share(reached.size, runs)}; audits "
            "needed (p10/p50/p90): "
            + (" / ".join(f"{v:.0f}" for v in np.percentile(reached, (10, 50, 90))) or "-")
        )
    s = base
    c, w = streams(rng, s, runs)
    fired = first_alarms(c >= s.threshold, w, s.alpha, s.delta)
    early = int(((fired >= 0) & (fired < s.change_at)).sum())
    caught = fired >= s.change_at
    delay = fired[caught] - s.change_at
    accepted_delay = np.array(
        [
            int((c[i, s.change_at : fired[i] + 1] >= s.threshold).sum())
            for i in np.flatnonzero(caught)
        ]
    )
    q = (10, 50, 90, 99)
    print(
        f"jump from {s.risk_before:.2f} to {s.risk_after:.2f} at audit {s.change_at}: caught in "
        f"{_share(int(caught.sum()), runs)}; false alarm before the jump in "
        f"{_share(early, runs)}"
    )
    print(
        "  detection delay, audits after the jump (p10/p50/p90/p99): "
        + " / ".join(f"{v:.0f}" for v in np.percentile(delay, q))
        + "; of them accepted by λ: "
        + " / ".join(f"{v:.0f}" for v in np.percentile(accepted_delay, q))
        + "; in criteria at 2 %: "
        + " / ".join(f"{v / s.audit_rate:,.0f}" for v in np.percentile(delay, q))
        + f"; mean {delay.mean():.0f} audits"
    )
    s = Scenario(n_audits=6000, n_recalibration=1000)
    started = time.perf_counter()
    after = recalibrate_after_alarm(rng, s, runs)
    alarmed = [r for r in after if r.detected_at >= 0]
    refit = [r for r in alarmed if r.threshold is not None]
    over = sum(r.true_risk > s.alpha for r in alarmed)
    again = sum(r.false_alarm_after for r in refit)
    coverage = np.array([(1.0 - (r.threshold or 1.0)) / 0.5 for r in refit])
    print(
        f"recalibration on the {s.n_recalibration} audits after each alarm "
        f"(stream {s.n_audits} audits, jump at {s.change_at}): alarms in "
        f"{len(alarmed)}/{runs} runs; a threshold found in {_share(len(refit), len(alarmed))}; "
        f"new threshold's true risk > α in {_share(over, len(alarmed))} (allowed δ); "
        f"coverage kept, median {np.median(coverage) if refit else 0:.1%} (was 40 %); "
        f"false alarm in the new epoch in {_share(again, max(len(refit), 1))}; "
        f"{time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    run()
