"""The KV-cache slot policy on its own: which slot a request uses and which one gives way.

Prompts are made of token runs standing for the judge prompt's parts: the
common instructions, one annotator's examples, the case. Blocks are a fixed
4 tokens here (the engine's rule also ends them at newlines; the policy only
sees the resulting block starts).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pytest

from reag.llm.kv_slots import SlotTable

BLOCK = 4
_fresh = itertools.count(10_000)


def run(n: int) -> list[int]:
    """n tokens that occur nowhere else."""
    return [next(_fresh) for _ in range(n)]


INSTRUCTIONS = run(12)
EXAMPLES = [run(40) for _ in range(5)]


def annotator_prompt(examples: list[int], case: list[int]) -> list[int]:
    return [*INSTRUCTIONS, *examples, *case]


class Engine:
    """What the engine does with a choice, minus llama.cpp."""

    def __init__(self, n_slots: int = 6) -> None:
        self.table = SlotTable(n_slots)

    def ask(self, ids: Sequence[int]) -> tuple[int, int]:
        """Evaluate ``ids`` (logits read at the last token); the slot used and tokens reused."""
        starts = list(range(0, len(ids), BLOCK))
        choice = self.table.choose(ids, starts, len(ids) - 1)
        self.table.record(choice.index, choice.reuse, list(ids), starts[-1])
        return choice.index, choice.reuse

    @contextmanager
    def group(self) -> Iterator[None]:
        self.table.open_group()
        try:
            yield
        finally:
            self.table.close_group()

    def judgement(
        self, case: list[int], examples: Sequence[list[int]] = EXAMPLES
    ) -> list[tuple[int, int]]:
        with self.group():
            return [self.ask(annotator_prompt(own, case)) for own in examples]

    def holds(self, prefix: Sequence[int]) -> bool:
        return any(s.tokens[: len(prefix)] == list(prefix) for s in self.table.slots)


PREFIX = len(INSTRUCTIONS) + len(EXAMPLES[0])  # 52, a block start


def test_a_cold_group_spreads_over_separate_slots() -> None:
    engine = Engine()
    used = engine.judgement(run(20))
    assert len({slot for slot, _ in used}) == 5
    # sharing only the instructions with a slot the group just wrote is no reason to cut it
    assert [reuse for _, reuse in used] == [0] * 5


@pytest.mark.parametrize("case_tokens", [20, 400], ids=["short case", "long case"])
def test_each_annotator_reuses_its_own_prefix_in_the_next_judgement(case_tokens: int) -> None:
    engine = Engine()
    first = engine.judgement(run(case_tokens))
    second = engine.judgement(run(case_tokens))
    third = engine.judgement(run(case_tokens))
    assert [reuse for _, reuse in second] == [PREFIX] * 5
    assert [reuse for _, reuse in third] == [PREFIX] * 5
    assert [slot for slot, _ in second] == [slot for slot, _ in first]


def test_one_off_prompts_do_not_evict_the_annotator_prefixes() -> None:
    engine = Engine()
    engine.judgement(run(20))
    burst = [engine.ask(run(60)) for _ in range(15)]  # ICRALM: 15 documents, scored once
    after = engine.judgement(run(20))
    engine.ask(run(60))
    engine.ask(run(60))
    later = engine.judgement(run(20))
    assert len({slot for slot, _ in burst}) == 1  # the one-offs took turns in the spare slot
    assert [reuse for _, reuse in after] == [PREFIX] * 5
    assert [reuse for _, reuse in later] == [PREFIX] * 5


def test_a_request_sharing_only_the_instructions_cuts_no_annotator_slot() -> None:
    engine = Engine()
    engine.judgement(run(20))
    engine.judgement(run(20))
    stranger = [*INSTRUCTIONS, *run(40)]  # e.g. an annotator whose example was left out
    slot, reuse = engine.ask(stranger)
    assert all(engine.holds([*INSTRUCTIONS, *EXAMPLES[j]]) for j in range(5))
    assert slot not in {s for s, _ in engine.judgement(run(20))}
    assert reuse in (0, len(INSTRUCTIONS))


def test_prompts_sharing_a_long_prefix_in_one_group_share_one_slot() -> None:
    """The old layout (shared case first, each annotator's part after) keeps working."""
    engine = Engine()
    case = run(80)
    with engine.group():
        used = [engine.ask([*case, *run(8)]) for _ in range(5)]
    assert len({slot for slot, _ in used}) == 1
    assert [reuse for _, reuse in used] == [0, 80, 80, 80, 80]


def test_a_repeated_request_reuses_all_but_its_last_block() -> None:
    engine = Engine()
    prompt = run(37)
    engine.ask(run(50))
    first_slot, _ = engine.ask(prompt)
    engine.ask(run(50))
    slot, reuse = engine.ask(prompt)
    assert (slot, reuse) == (first_slot, 36)


def test_a_new_app_takes_over_the_slots_of_an_old_one() -> None:
    engine = Engine()
    engine.judgement(run(20))
    engine.judgement(run(20))
    new_app = [run(40) for _ in range(5)]
    engine.judgement(run(20), new_app)
    second = engine.judgement(run(20), new_app)
    assert [reuse for _, reuse in second] == [PREFIX] * 5


def test_eviction_takes_the_least_reused_then_the_least_recently_used() -> None:
    engine = Engine(n_slots=3)
    a, b, c = run(16), run(16), run(16)
    engine.ask(a)
    engine.ask(a)  # a is reused once
    slot_b, _ = engine.ask(b)
    slot_c, _ = engine.ask(c)
    victim, reuse = engine.ask(run(16))  # b and c were never reused; b is older
    assert reuse == 0
    assert victim == slot_b
    victim, _ = engine.ask(run(16))
    assert victim == slot_c
    assert engine.holds(a)


def test_aging_lets_a_prefix_that_is_no_longer_reused_go() -> None:
    engine = Engine(n_slots=2)
    stale = run(16)
    engine.ask(stale)
    engine.ask(stale)
    hot = run(16)
    for _ in range(400):  # reused over and over while the stale prefix is idle
        engine.ask(hot)
    engine.ask(run(16))  # a one-off takes the stale slot once its value decayed below the hot one
    assert engine.holds(hot)
    assert not engine.holds(stale)


def test_a_group_larger_than_the_cache_still_runs() -> None:
    engine = Engine(n_slots=3)
    used = engine.judgement(run(20))
    assert len(used) == 5
    assert len({slot for slot, _ in used}) == 3


def test_reuse_stops_at_a_block_start_the_last_closed_block_and_the_cap() -> None:
    table = SlotTable(1)
    table.record(0, 0, list(range(30)), on_grid=28)
    slot = table.slots[0]
    starts = list(range(0, 40, BLOCK))
    assert SlotTable.reusable(slot, [*range(30), 99], starts, cap=30) == 28
    assert SlotTable.reusable(slot, [*range(10), 99], starts, cap=30) == 8
    assert SlotTable.reusable(slot, [*range(30), 99], starts, cap=13) == 12
    assert SlotTable.reusable(slot, [5, 6, 7], [0], cap=2) == 0


def test_at_least_one_slot() -> None:
    with pytest.raises(ValueError, match="at least one"):
        SlotTable(0)
