"""Synthetic judges with known behaviour, for testing the calibration guarantee.

Tests run with ``--import-mode=importlib``, so they reach the generators
through fixtures (each a ``draw(rng, n) -> (confidence, wrong, p_wrong)``).

Every item has a hardness shared by all tiers (so the items tier 1 passes up
really are harder for tier 2, as in production). A tier's grip on an item is
its skill minus the hardness plus noise; the chance of a wrong verdict falls
with grip, and confidence rises with a noisy view of the same grip, piling up
just below 1 as LLM confidences do. True risks are estimated on a large fresh
test set drawn from the same generator, averaging each accepted item's
known chance of being wrong rather than a coin flip, which makes the estimate
exact up to the test set's finite size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from numpy.typing import NDArray

Draw = Callable[
    [np.random.Generator, int], tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.float64]]
]


@dataclass(frozen=True)
class Judges:
    skills: tuple[float, ...] = (0.6, 1.4, 2.0)
    error_gain: float = 1.6
    confidence_gain: float = 4.0
    confidence_noise: float = 0.5
    grip_noise: float = 0.5

    def draw(
        self, rng: np.random.Generator, n: int
    ) -> tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.float64]]:
        """(confidence, wrong, chance of being wrong), each items × tiers."""
        skills = np.asarray(self.skills)
        hardness = rng.normal(size=(n, 1))
        grip = skills[None, :] - hardness + rng.normal(scale=self.grip_noise, size=(n, skills.size))
        p_wrong = 1.0 / (1.0 + np.exp(self.error_gain * grip + 1.0))
        wrong = rng.random((n, skills.size)) < p_wrong
        seen = grip + rng.normal(scale=self.confidence_noise, size=grip.shape)
        return self.confidence(seen), wrong, p_wrong

    def confidence(self, seen: NDArray[np.float64]) -> NDArray[np.float64]:
        """Rises with the judge's noisy view of its grip, piling up just below 1."""
        confidence: NDArray[np.float64] = 1.0 - 0.5 / (1.0 + np.exp(self.confidence_gain * seen))
        return confidence


@dataclass(frozen=True)
class NeverSaturatingJudges(Judges):
    """The same judges, but confidence tops out at ``ceiling`` and is spread, not piled up.

    Like a small local model: its most confident items are few and thinly
    spread, so the first candidate that accepts anything accepts one item.
    """

    confidence_gain: float = 0.8
    ceiling: float = 0.92

    def confidence(self, seen: NDArray[np.float64]) -> NDArray[np.float64]:
        spread = self.ceiling - 0.5
        confidence: NDArray[np.float64] = np.round(
            0.5 + spread / (1.0 + np.exp(-self.confidence_gain * seen)), 3
        )
        return confidence


@dataclass(frozen=True)
class BlindJudges:
    """Overconfident judges with no signal: every confidence above 0.999, a flat error rate.

    Each tier sits just past its risk limit, the worst case for composing
    per-tier guarantees: whichever tier wrongly accepts, it accepts everything.
    """

    error_rate: float
    n_tiers: int = 3

    def draw(
        self, rng: np.random.Generator, n: int
    ) -> tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.float64]]:
        confidence = rng.uniform(0.9991, 1.0, size=(n, self.n_tiers))
        p_wrong = np.full((n, self.n_tiers), self.error_rate)
        wrong = rng.random((n, self.n_tiers)) < p_wrong
        return confidence, wrong, p_wrong


@pytest.fixture
def judges() -> Draw:
    """Three judges of rising skill whose confidence tracks their correctness."""
    return Judges().draw


@pytest.fixture
def flat_judges() -> Draw:
    """Three judges of rising skill whose confidences never exceed 0.92 (small local models)."""
    return NeverSaturatingJudges().draw


@pytest.fixture
def blind_judges() -> Callable[[float], Draw]:
    """Factory: overconfident, signal-free judges with the given flat error rate."""

    def make(error_rate: float) -> Draw:
        return BlindJudges(error_rate).draw

    return make
