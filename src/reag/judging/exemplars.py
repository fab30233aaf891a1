"""The simulated annotators' in-context examples (paper 3.4.1).

Each of the N annotators is shown K expert-labelled items from the app's
calibration set. The sets are drawn stratified by label and persona category
so that every annotator sees both verdicts and a spread of personas, and no two
annotators see the same set: the disagreement between annotators is the
confidence signal, and identical annotators could not disagree.

The draw is a pure function of the pool and the seed, so the judges and the
calibrator, which must use the same prompts for a threshold to mean anything,
get the same sets from the same store.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from math import comb
from typing import Literal

from reag.judging.errors import JudgeConfigError

Label = Literal["YES", "NO"]
LABELS: tuple[Label, Label] = ("YES", "NO")

# How often a duplicate set is redrawn before the pool is declared too small for
# another distinct set; small pools are enumerated instead (see _distinct_fallback).
_REDRAWS = 64


@dataclass(frozen=True, slots=True)
class LabelledExample:
    """One expert-labelled criterion–response pair, as an annotator is shown it."""

    item_id: str
    label: Label
    persona_category: str
    criterion: str
    query: str
    actual_response: str
    persona_name: str = ""
    explanation: str = ""


@dataclass(frozen=True, slots=True)
class AnnotatorSets:
    """The example sets of one (app, N, K, seed); ``sets[j]`` is annotator j's.

    An empty pool gives one zero-shot annotator: N identical prompts would
    only multiply the cost without adding a second opinion.
    """

    sets: tuple[tuple[LabelledExample, ...], ...]

    @property
    def n_annotators(self) -> int:
        return len(self.sets)

    @property
    def item_ids(self) -> frozenset[str]:
        return frozenset(e.item_id for s in self.sets for e in s)

    def digest(self) -> str:
        """Names the sets (ids and labels, in order); part of the prompt version."""
        h = hashlib.sha256()
        for j, examples in enumerate(self.sets):
            for e in examples:
                h.update(f"{j}\t{e.item_id}\t{e.label}\n".encode())
        return h.hexdigest()

    def without(self, item_id: str | None) -> tuple[tuple[LabelledExample, ...], ...]:
        """The sets with ``item_id`` left out, for judging that very item.

        A calibration item must never be shown to an annotator with its own
        expert label; dropping it (rather than substituting another example)
        keeps every other annotator's prompt identical to production.
        """
        if item_id is None or item_id not in self.item_ids:
            return self.sets
        return tuple(tuple(e for e in s if e.item_id != item_id) for s in self.sets)


def _stratify(
    pool: Sequence[LabelledExample], rng: random.Random
) -> dict[Label, dict[str, list[LabelledExample]]]:
    strata: dict[Label, dict[str, list[LabelledExample]]] = {label: {} for label in LABELS}
    for example in sorted(pool, key=lambda e: e.item_id):
        strata[example.label].setdefault(example.persona_category, []).append(example)
    for by_persona in strata.values():
        for members in by_persona.values():
            rng.shuffle(members)
    return strata


class _Drawer:
    """Takes examples stratum by stratum, cycling personas, each example once while any is left."""

    def __init__(self, pool: Sequence[LabelledExample], rng: random.Random) -> None:
        self._rng = rng
        self._pool = sorted(pool, key=lambda e: e.item_id)
        self._strata = _stratify(pool, rng)
        self._personas = {label: sorted(self._strata[label]) for label in LABELS}
        self._cursor = dict.fromkeys(LABELS, 0)

    def _take(self, label: Label, exclude: set[str]) -> LabelledExample | None:
        personas = self._personas[label]
        for step in range(len(personas)):
            persona = personas[(self._cursor[label] + step) % len(personas)]
            members = self._strata[label][persona]
            for index, example in enumerate(members):
                if example.item_id not in exclude:
                    self._cursor[label] = (self._cursor[label] + step + 1) % len(personas)
                    return members.pop(index)
        return None

    def take(self, label: Label, exclude: set[str]) -> LabelledExample:
        other: Label = "NO" if label == "YES" else "YES"
        found = self._take(label, exclude) or self._take(other, exclude)
        if found is not None:
            return found
        # Every example has been used once: reuse, preferring the wanted label.
        candidates = [e for e in self._pool if e.item_id not in exclude]
        preferred = [e for e in candidates if e.label == label] or candidates
        return self._rng.choice(preferred)


def _distinct_fallback(
    pool: Sequence[LabelledExample], k: int, taken: set[frozenset[str]], rng: random.Random
) -> tuple[LabelledExample, ...] | None:
    ordered = sorted(pool, key=lambda e: e.item_id)
    options = [c for c in combinations(ordered, k) if frozenset(e.item_id for e in c) not in taken]
    if not options:
        return None
    # Prefer sets with both labels, as the stratified draw would.
    mixed = [c for c in options if len({e.label for e in c}) == len(LABELS)] or options
    return rng.choice(mixed)


def draw_annotator_sets(
    pool: Sequence[LabelledExample], n_annotators: int, k_examples: int, seed: int
) -> AnnotatorSets:
    """N distinct sets of K examples, stratified by label and persona, deterministic per seed.

    Annotator j's slot s asks for label YES or NO alternately (offset by j), so
    each set mixes both verdicts and the sets together are balanced; within a
    label the persona categories are taken in turn. While the pool has unused
    examples every example is used at most once (disjoint sets when the pool
    holds N·K). A pool too small for N distinct sets yields as many as exist;
    a pool smaller than K gives every annotator the whole pool's worth.
    """
    if n_annotators < 1:
        raise JudgeConfigError(f"the annotator count N must be at least 1, got {n_annotators}")
    if k_examples < 0:
        raise JudgeConfigError(f"examples per annotator K must be ≥ 0, got {k_examples}")
    ids = [e.item_id for e in pool]
    if len(set(ids)) != len(ids):
        raise JudgeConfigError("the example pool holds an item id twice; dedup it first")
    k = min(k_examples, len(pool))
    if k == 0:
        return AnnotatorSets(sets=((),))
    rng = random.Random(seed)
    drawer = _Drawer(pool, rng)
    n = min(n_annotators, comb(len(pool), k))
    taken: set[frozenset[str]] = set()
    sets: list[tuple[LabelledExample, ...]] = []
    for j in range(n):
        chosen: list[LabelledExample] = []
        for attempt in range(_REDRAWS):
            chosen = []
            exclude: set[str] = set()
            for slot in range(k):
                example = drawer.take(LABELS[(j + slot + attempt) % 2], exclude)
                chosen.append(example)
                exclude.add(example.item_id)
            if frozenset(exclude) not in taken:
                break
        else:
            fallback = _distinct_fallback(pool, k, taken, rng)
            if fallback is None:
                break
            chosen = list(fallback)
        taken.add(frozenset(e.item_id for e in chosen))
        sets.append(tuple(chosen))
    return AnnotatorSets(sets=tuple(sets))
