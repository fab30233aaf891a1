from __future__ import annotations

import pytest

from reag.retrieval import adaptive_k, fixed_k


def test_cut_at_the_largest_gap_plus_buffer() -> None:
    # sorted: -1.0 -1.1 -1.2 | -2.5 -2.6 -2.7 -2.8 -2.9 : the drop after the third
    scores = [-2.6, -1.0, -2.5, -1.2, -1.1, -2.7, -2.8, -2.9]
    choice = adaptive_k(scores, buffer=1)
    assert choice.k == 3
    assert choice.buffer == 1
    assert choice.n_selected == 4
    assert choice.gap == pytest.approx(1.3)


def test_a_single_clear_winner_gives_k_1() -> None:
    assert adaptive_k([-0.5, -3.0, -3.1, -3.2], buffer=0).k == 1


def test_gaps_in_the_tail_are_outside_the_window() -> None:
    # The largest gap overall is between the 5th and 6th (an outlier at the bottom);
    # the first half (window 0.5 of 6 = 3 positions) only sees the gap after the 2nd.
    scores = [-1.0, -1.1, -1.5, -1.6, -1.7, -9.0]
    assert adaptive_k(scores, window=0.5, buffer=0).k == 2
    assert adaptive_k(scores, window=1.0, buffer=0).k == 5


def test_max_k_caps_the_search() -> None:
    scores = [-1.0, -1.1, -1.5, -1.6, -1.7, -5.0, -5.1, -5.2, -5.3, -5.4, -5.5, -5.6]
    assert adaptive_k(scores, buffer=0).k == 5
    assert adaptive_k(scores, buffer=0, max_k=3).k == 2


def test_ties_go_to_the_smaller_k() -> None:
    assert adaptive_k([3.0, 2.0, 1.0, 0.0], buffer=0, window=1.0).k == 1
    assert adaptive_k([1.0, 1.0, 1.0, 1.0], buffer=0).k == 1


def test_buffer_is_capped_by_what_is_left() -> None:
    choice = adaptive_k([-1.0, -5.0], buffer=3)
    assert (choice.k, choice.buffer) == (1, 1)


def test_degenerate_lists() -> None:
    assert adaptive_k([]).n_selected == 0
    assert (adaptive_k([-2.0]).k, adaptive_k([-2.0]).buffer) == (1, 0)


def test_invalid_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="window"):
        adaptive_k([1.0, 0.0], window=0)
    with pytest.raises(ValueError, match="buffer"):
        adaptive_k([1.0, 0.0], buffer=-1)
    with pytest.raises(ValueError, match="NaN"):
        adaptive_k([1.0, float("nan")])


def test_fixed_k_is_capped_by_the_corpus() -> None:
    assert fixed_k(10, 5).k == 5
    assert fixed_k(3, 5).k == 3


def test_min_k_starts_the_search_further_down() -> None:
    scores = [-0.5, -2.0, -2.1, -2.2, -3.5, -3.6, -3.7, -3.8]
    assert adaptive_k(scores, buffer=0).k == 1
    assert adaptive_k(scores, buffer=0, min_k=2).k == 4
    assert adaptive_k([-1.0, -2.0], buffer=0, min_k=3).k == 2
    with pytest.raises(ValueError, match="min_k"):
        adaptive_k(scores, min_k=5, max_k=3)
