"""Annotator example sets: stratified, distinct, deterministic per seed."""

from __future__ import annotations

from collections import Counter

import pytest

from reag.judging.errors import JudgeConfigError
from reag.judging.exemplars import LabelledExample, draw_annotator_sets

from .conftest import PERSONAS, make_pool


def ids(sets: tuple[tuple[LabelledExample, ...], ...]) -> list[list[str]]:
    return [[e.item_id for e in s] for s in sets]


def test_each_annotator_gets_a_distinct_set_of_k(pool: list[LabelledExample]) -> None:
    drawn = draw_annotator_sets(pool, 5, 3, seed=7)
    assert drawn.n_annotators == 5
    assert all(len(s) == 3 for s in drawn.sets)
    assert len({frozenset(s) for s in ids(drawn.sets)}) == 5
    # The pool holds more than N*K items, so no example is shown twice.
    flat = [i for s in ids(drawn.sets) for i in s]
    assert len(flat) == len(set(flat)) == 15


def test_sets_are_stratified_by_label_and_persona(pool: list[LabelledExample]) -> None:
    drawn = draw_annotator_sets(pool, 5, 3, seed=1)
    for examples in drawn.sets:
        assert {e.label for e in examples} == {"YES", "NO"}
    labels = Counter(e.label for s in drawn.sets for e in s)
    assert abs(labels["YES"] - labels["NO"]) <= 1
    assert {e.persona_category for s in drawn.sets for e in s} == set(PERSONAS)


def test_draw_is_deterministic_per_seed_and_input_order(pool: list[LabelledExample]) -> None:
    first = draw_annotator_sets(pool, 5, 3, seed=3)
    assert ids(draw_annotator_sets(list(reversed(pool)), 5, 3, seed=3).sets) == ids(first.sets)
    assert ids(draw_annotator_sets(pool, 5, 3, seed=4).sets) != ids(first.sets)
    assert first.digest() == draw_annotator_sets(pool, 5, 3, seed=3).digest()


def test_a_small_pool_reuses_examples_but_keeps_sets_distinct() -> None:
    drawn = draw_annotator_sets(make_pool(6), 5, 3, seed=0)
    assert drawn.n_annotators == 5
    assert len({frozenset(s) for s in ids(drawn.sets)}) == 5


def test_a_tiny_pool_yields_only_as_many_sets_as_exist() -> None:
    drawn = draw_annotator_sets(make_pool(3), 5, 3, seed=0)
    assert [sorted(s) for s in ids(drawn.sets)] == [["e00", "e01", "e02"]]
    two = draw_annotator_sets(make_pool(2), 5, 3, seed=0)  # K shrinks to the pool
    assert [len(s) for s in two.sets] == [2]


def test_an_empty_pool_means_one_zero_shot_annotator() -> None:
    drawn = draw_annotator_sets([], 5, 3, seed=0)
    assert drawn.sets == ((),)


def test_without_drops_only_the_judged_item(pool: list[LabelledExample]) -> None:
    drawn = draw_annotator_sets(pool, 5, 3, seed=2)
    victim = drawn.sets[1][0].item_id
    sets = drawn.without(victim)
    assert victim not in {e.item_id for s in sets for e in s}
    assert [len(s) for s in sets] == [3, 2, 3, 3, 3]
    assert drawn.without("not-an-example") == drawn.sets


def test_bad_settings_and_duplicate_ids_are_refused() -> None:
    with pytest.raises(JudgeConfigError, match="at least 1"):
        draw_annotator_sets(make_pool(5), 0, 3, seed=0)
    dup = make_pool(2)
    with pytest.raises(JudgeConfigError, match="twice"):
        draw_annotator_sets([dup[0], dup[0]], 2, 1, seed=0)
