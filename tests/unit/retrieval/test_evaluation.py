from __future__ import annotations

import math

import pytest

from reag.retrieval.evaluation import ndcg, precision, recall, summarise


def test_precision_and_recall_of_the_selected_set() -> None:
    selected = ["a", "x", "b"]
    relevant = {"a", "b", "c", "d"}
    assert precision(selected, relevant) == pytest.approx(2 / 3)
    assert recall(selected, relevant) == pytest.approx(2 / 4)
    assert precision([], relevant) == 0.0


def test_ndcg_is_one_for_an_ideal_list_and_lower_when_relevant_come_late() -> None:
    relevant = {"a", "b"}
    assert ndcg(["a", "b", "x"], relevant) == pytest.approx(1.0)
    late = ndcg(["x", "a", "b"], relevant)
    expected = (1 / math.log2(3) + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert late == pytest.approx(expected)
    assert ndcg(["x", "y"], relevant) == 0.0


def test_ndcg_at_one_with_a_relevant_first_document_is_one() -> None:
    assert ndcg(["b"], {"a", "b", "c"}) == pytest.approx(1.0)


def test_summary_macro_averages_and_f1() -> None:
    summary = summarise([(["a"], {"a"}), (["x", "a"], {"a", "b"})])
    assert summary.n == 2
    assert summary.precision == pytest.approx((1 + 0.5) / 2)
    assert summary.recall == pytest.approx((1 + 0.5) / 2)
    assert summary.mean_selected == pytest.approx(1.5)
    assert summary.f1 == pytest.approx(0.75)


def test_recall_needs_relevant_documents() -> None:
    with pytest.raises(ValueError, match="at least one relevant"):
        recall(["a"], set())
