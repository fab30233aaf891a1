"""The conformal guarantee on confidences made by simulated annotators who can disagree.

The calibration guarantee tests (tests/unit/calibration) draw confidences
directly. Here the confidence comes from where it does in production: N
annotators each give a label distribution, and ``aggregate`` turns them into
a confidence and a verdict (eq. 4, the max of the mean distribution). What
that adds is the structure real annotators have: a per-item difficulty they
share, a per-annotator bias (each is shown other examples), per-item noise,
and items where they split. The fixed sequence must keep its promise on
confidences of that shape too: over many calibration draws, the
disagreement rate among accepted items exceeds α in at most δ of them, up
to Monte-Carlo noise (the 99 % quantile of Bin(draws, δ)).

The item distribution is a fixed population of items, each judged once by
``aggregate``; calibration draws are i.i.d. from it and a threshold's true
risk is its disagreement rate over the whole population, exact, with no
test-set noise to blur violations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats

from reag.calibration.fixed_sequence import fit_threshold
from reag.judging.judge import aggregate
from reag.llm.base import LabelProbs, Usage

DRAWS = 400
POPULATION = 40_000
N_CAL = 1000

# P_j(YES) items × N, confidence, wrong, and the mean of each annotator's max, per item.
Population = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_], NDArray[np.float64]]


@dataclass(frozen=True)
class Annotators:
    """N annotators over items with a true label and a shared, signed difficulty.

    ``evidence`` is how clearly an item shows its true label: normal around
    ``clarity``, so a tail of items points the wrong way (all annotators
    tend to err there, as on genuinely misleading cases). Annotator j reads
    it with its own leniency towards YES (its examples differ from the
    others') and per-item noise; where evidence is weak they split.
    """

    n: int = 5
    clarity: float = 1.0
    bias: float = 0.6
    noise: float = 1.0
    gain: float = 3.0

    def judge(self, rng: np.random.Generator, items: int) -> Population:
        """Each item's annotators, and what ``aggregate`` makes of them."""
        truth_yes = rng.random(items) < 0.5
        sign = np.where(truth_yes, 1.0, -1.0)
        evidence = rng.normal(self.clarity, 1.0, size=items)
        leniency = rng.normal(0.0, self.bias, size=self.n)  # annotator j's lean towards YES
        noise = rng.normal(0.0, self.noise, size=(items, self.n))
        p_yes = 1.0 / (1.0 + np.exp(-self.gain * ((sign * evidence)[:, None] + leniency + noise)))
        confidence = np.empty(items)
        verdict_yes = np.empty(items, dtype=np.bool_)
        usage = Usage()
        for i, row in enumerate(p_yes.tolist()):
            judgement = aggregate(
                [LabelProbs({"YES": p, "NO": 1.0 - p}, "logprobs", "sim", usage, 0.0) for p in row]
            )
            confidence[i] = judgement.confidence
            verdict_yes[i] = judgement.verdict == "YES"
        mean_of_max = np.maximum(p_yes, 1.0 - p_yes).mean(axis=1)
        return p_yes, confidence, verdict_yes != truth_yes, mean_of_max


@dataclass
class Outcome:
    draws: int
    violations: int
    found: int
    coverage: float  # mean share of the population accepted, over draws with a threshold
    worst_risk: float


def _simulate(
    confidence: NDArray[np.float64],
    wrong: NDArray[np.bool_],
    *,
    alpha: float,
    delta: float,
    seed: int,
) -> Outcome:
    rng = np.random.default_rng(seed)
    violations = found = 0
    coverage: list[float] = []
    worst = 0.0
    for _ in range(DRAWS):
        idx = rng.integers(0, confidence.size, size=N_CAL)
        fit = fit_threshold(confidence=confidence[idx], wrong=wrong[idx], alpha=alpha, delta=delta)
        accepted = fit.accepts(confidence)
        if fit.threshold is None or not accepted.any():
            continue
        found += 1
        risk = float(wrong[accepted].mean())
        violations += risk > alpha
        worst = max(worst, risk)
        coverage.append(float(accepted.mean()))
    return Outcome(DRAWS, violations, found, float(np.mean(coverage)) if coverage else 0.0, worst)


@pytest.fixture(scope="module")
def population() -> Population:
    return Annotators().judge(np.random.default_rng(2024), POPULATION)


def test_the_simulated_annotators_disagree(population: Population) -> None:
    """Not a confidence generator in disguise: annotators split, and that lowers c."""
    p_yes, confidence, wrong, mean_of_max = population
    split = (p_yes > 0.5).any(axis=1) & (p_yes < 0.5).any(axis=1)
    assert split.mean() > 0.25
    assert 0.1 < wrong.mean() < 0.4  # a judge with errors worth calibrating away
    # Where they split, the mean of maxima overstates the confidence that eq. 4 gives.
    assert np.all(confidence <= mean_of_max + 1e-12)
    assert np.median(mean_of_max[split] - confidence[split]) > 0.1


@pytest.mark.parametrize(("alpha", "delta"), [(0.1, 0.1), (0.1, 0.05), (0.15, 0.1)])
def test_accepted_disagreement_exceeds_alpha_in_at_most_delta_of_draws(
    population: Population, alpha: float, delta: float
) -> None:
    _, confidence, wrong, _ = population
    out = _simulate(confidence, wrong, alpha=alpha, delta=delta, seed=7)
    assert out.violations <= stats.binom.ppf(0.99, out.draws, delta), out
    # Not vacuous: thresholds are found in most draws and accept a real share of items.
    assert out.found >= 0.75 * out.draws, out
    assert out.coverage > 0.3, out
