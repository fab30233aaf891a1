"""Reciprocal-rank fusion and adaptive k under score rescaling (mechanics, not results)."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from reag.retrieval import adaptive_k, rank_normalise, reciprocal_rank_fusion, threshold_k
from reag.retrieval.fusion import ranks

SCORES = st.lists(
    st.floats(min_value=-50, max_value=50, allow_nan=False, allow_infinity=False),
    min_size=2,
    max_size=40,
    unique=True,
)


def test_rrf_is_the_sum_of_reciprocal_ranks_with_c_60() -> None:
    a = [3.0, 1.0, 2.0]  # ranks 1, 3, 2
    b = [0.1, 0.9, 0.5]  # ranks 3, 1, 2
    fused = reciprocal_rank_fusion([a, b])
    assert fused == pytest.approx([1 / 61 + 1 / 63, 1 / 63 + 1 / 61, 2 / 62])


def test_rrf_prefers_the_document_every_kernel_ranks_high() -> None:
    # docs 0 and 3 are first for one kernel and last for the other; doc 1 is second for both.
    fused = reciprocal_rank_fusion([[9.0, 8.0, 1.0, 0.0], [0.0, 8.0, 7.0, 9.0]])
    assert max(range(4), key=lambda i: fused[i]) == 1


def test_rrf_ignores_documents_a_kernel_did_not_score() -> None:
    fused = reciprocal_rank_fusion([[1.0, 2.0, 3.0], [5.0, -math.inf, -math.inf]])
    assert fused[1] == pytest.approx(1 / 62)
    assert fused[0] == pytest.approx(1 / 63 + 1 / 61)


def test_rrf_refuses_rankings_of_different_documents() -> None:
    with pytest.raises(ValueError, match="same documents"):
        reciprocal_rank_fusion([[1.0, 2.0], [1.0]])
    with pytest.raises(ValueError, match="at least one"):
        reciprocal_rank_fusion([])


@settings(max_examples=200, deadline=None)
@given(SCORES, SCORES, st.floats(0.001, 1000), st.floats(-1000, 1000))
def test_rrf_depends_only_on_ranks(
    a: list[float], b: list[float], scale: float, shift: float
) -> None:
    n = min(len(a), len(b))
    a, b = a[:n], b[:n]
    warped = [math.atan(x) * scale + shift for x in a]  # monotone, another scale entirely
    assume(len(set(warped)) == n)  # float rounding must not create ties
    assert reciprocal_rank_fusion([a, b]) == pytest.approx(reciprocal_rank_fusion([warped, b]))


@settings(max_examples=300, deadline=None)
@given(SCORES, st.floats(1e-3, 1e3), st.floats(-1e3, 1e3), st.integers(1, 4), st.integers(0, 2))
def test_adaptive_k_is_unchanged_by_a_positive_affine_rescaling(
    scores: list[float], scale: float, shift: float, min_k: int, buffer: int
) -> None:
    if min_k >= len(scores):
        min_k = 1
    rescaled = [scale * s + shift for s in scores]
    before = adaptive_k(scores, min_k=min_k, buffer=buffer, max_k=8)
    after = adaptive_k(rescaled, min_k=min_k, buffer=buffer, max_k=8)
    # Float rounding may create or break an exact tie between two gaps; compare
    # the gaps' order, which is what the rule reads, when they are distinct.
    ordered = sorted(scores, reverse=True)
    gaps = [ordered[i] - ordered[i + 1] for i in range(len(ordered) - 1)]
    if len({round(g, 6) for g in gaps}) == len(gaps):
        assert (after.k, after.buffer) == (before.k, before.buffer)


def test_adaptive_k_finds_the_agreed_head_of_a_fused_ranking() -> None:
    """Three kernels agree on the same 4 documents, then scatter: the cut falls after 4."""
    rng = random.Random(7)
    n_docs, trials = 40, 200
    hits = 0
    for _ in range(trials):
        lists = []
        for _kernel in range(3):
            head = rng.sample(range(4), 4)
            tail = rng.sample(range(4, n_docs), n_docs - 4)
            order = head + tail
            scale, shift = rng.uniform(0.01, 100.0), rng.uniform(-50.0, 50.0)  # any scale
            scores = [0.0] * n_docs
            for position, doc in enumerate(order):
                scores[doc] = shift + scale * math.log(n_docs + 1 - position)
            lists.append(scores)
        fused = reciprocal_rank_fusion(lists)
        hits += adaptive_k(fused, min_k=1, buffer=0, max_k=8).k == 4
    assert hits >= 0.8 * trials


def test_rank_normalise_is_the_same_for_any_monotone_transform() -> None:
    scores = [0.2, 5.0, -3.0, 1.0]
    assert rank_normalise(scores) == rank_normalise([math.exp(s) for s in scores])
    assert ranks(scores) == [3, 1, 4, 2]
    assert rank_normalise(scores) == [0.5, 1.0, 0.25, 0.75]


def test_threshold_k_keeps_what_clears_the_bar_within_bounds() -> None:
    probs = [0.9, 0.2, 0.7, 0.55, 0.1]
    assert threshold_k(probs, 0.5).k == 3
    assert threshold_k(probs, 0.95, min_k=2).k == 2
    assert threshold_k(probs, 0.0, max_k=4).k == 4
