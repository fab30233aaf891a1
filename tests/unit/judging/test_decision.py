"""Accepting against λ̂ (with the tier's temperature) and the thresholds a judge holds."""

from __future__ import annotations

import math

import pytest

from reag.judging.decision import ThresholdBook, accepts, scaled_confidence
from reag.v1 import events_pb2 as pb


def threshold(
    value: float | None,
    *,
    tier: int = 1,
    temperature: float = 1.0,
    model: str = "fake:judge",
    seconds: int = 100,
    app: str = "nutrition",
) -> pb.Threshold:
    t = pb.Threshold(
        app=app,
        tier=tier,
        model=model,
        has_threshold=value is not None,
        temperature=temperature,
        reason="" if value is not None else "no λ passed",
    )
    if value is not None:
        t.threshold = value
    t.computed_at.seconds = seconds
    return t


def test_no_threshold_accepts_nothing() -> None:
    assert not accepts(0.999999, None)
    assert not accepts(1.0, threshold(None))


def test_accept_at_or_above_lambda() -> None:
    assert accepts(0.93, threshold(0.93))
    assert not accepts(0.9299, threshold(0.93))


def test_temperature_is_applied_before_comparing() -> None:
    # With T=4, c=0.99 becomes σ(logit(0.99)/4) ≈ 0.7590.
    scaled = 1 / (1 + math.exp(-math.log(0.99 / 0.01) / 4))
    t = threshold(0.75, temperature=4.0)
    assert scaled_confidence(0.99, t) == pytest.approx(scaled)
    assert accepts(0.99, t)
    assert not accepts(0.99, threshold(0.76, temperature=4.0))
    assert accepts(0.99, threshold(0.76, temperature=1.0))  # unscaled it would pass


def test_unset_temperature_means_no_scaling() -> None:
    t = threshold(0.9)
    t.ClearField("temperature")
    assert scaled_confidence(0.95, t) == 0.95
    assert accepts(0.95, t)


def test_book_keeps_its_own_tier_and_model_and_the_newest() -> None:
    book = ThresholdBook(tier=2, model="fake:judge")
    assert not book.update(threshold(0.9, tier=1)).applied
    assert not book.update(threshold(0.9, tier=2, model="openai:gpt-4.1-mini")).applied
    assert book.update(threshold(0.9, tier=2, seconds=100)).applied
    assert not book.update(threshold(0.5, tier=2, seconds=50)).applied  # older
    held = book.get("nutrition")
    assert held is not None
    assert held.threshold == pytest.approx(0.9)
    update = book.update(threshold(None, tier=2, seconds=200))
    assert update.applied
    assert "no threshold" in update.reason
    held = book.get("nutrition")
    assert held is not None
    assert not held.has_threshold
    assert book.get("other-app") is None
    assert book.apps() == ["nutrition"]
