"""Which KV-cache slot of the local model a request uses, and which slot gives way.

The engine keeps several token sequences cached side by side (llama.cpp
sequences, one slot each). A judgement asks N simulated annotators whose
prompts start with each annotator's own examples; with one slot per
annotator those prefixes stay cached from one criterion to the next. The
same model also serves one-off prompts (ICRALM scores every candidate
document once per intention; self-reasoning and oracle writing are chats),
which must not flush the annotators' prefixes.

The rules, per request:

1. **Reuse.** A slot is a candidate when the request can reuse a block-aligned
   prefix of what it holds (``reusable``) and cutting it there is worth it:
   the reused part is at least as long as the part thrown away, or (for a slot
   not yet used by the current group) no other slot holds that reused prefix
   as well. The second clause keeps a request that only shares the judge's
   common instructions with a slot from cutting away that slot's annotator
   examples, while a request that shares an annotator's whole examples block
   reuses it whatever the length of the case after it. Among candidates the
   longest reuse wins.
2. **Group.** Slots written by earlier requests of the same group (one
   ``label_probs_many`` call: one annotator group) are cut only under the
   first clause, so the annotators of a cold group spread over separate slots
   instead of overwriting each other, while prompts that share nearly
   everything (the old shared-case layout) still reuse one slot.
3. **Empty slot**, if no candidate.
4. **Evict** the slot with the least reuse value, ties to the least recently
   used. A slot's value is the number of tokens requests have reused from it,
   halved every ``half_life`` requests (least frequently reused, with aging),
   so a prefix that stopped being reused decays until something new
   displaces it. A slot written by a group starts at ``GROUP_PRIOR`` rather
   than 0: an annotator's prefix is worth keeping before its first reuse,
   while a slot a single request wrote and nothing reused is worth 0, so a
   burst of one-off prompts evicts one-off prompts. A request of a group
   never evicts a slot its own group wrote unless every slot has been
   written by it.

The table is pure bookkeeping (no llama.cpp), so the policy is tested on its own.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

DEFAULT_HALF_LIFE = 64.0
"""Requests after which a slot's reuse value has halved."""
GROUP_PRIOR = 1.0
"""Value, in reused tokens, of a slot a group wrote before anything reused it."""


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


@dataclass(slots=True)
class Slot:
    """One KV-cache sequence: the tokens it holds, in the order they were evaluated."""

    seq: int
    tokens: list[int] = field(default_factory=list)
    # tokens[:on_grid] were evaluated in blocks the block rule closed; a block still
    # open at the end of a prompt may grow with the next request, so reuse stops there.
    on_grid: int = 0
    value: float = 0.0  # tokens reused from this slot, aged (see SlotTable.value)
    stamp: int = 0  # request count when ``value`` was last brought up to date
    last_used: int = -1

    @property
    def empty(self) -> bool:
        return not self.tokens

    def clear(self) -> None:
        self.tokens = []
        self.on_grid = 0
        self.value = 0.0
        self.last_used = -1


@dataclass(frozen=True, slots=True)
class Choice:
    """Slot ``index`` serves the request and keeps its first ``reuse`` tokens."""

    index: int
    reuse: int


class SlotTable:
    def __init__(self, n_slots: int, *, half_life: float = DEFAULT_HALF_LIFE) -> None:
        if n_slots < 1:
            raise ValueError(f"the local model needs at least one KV-cache slot, got {n_slots}")
        self.slots = [Slot(seq=i) for i in range(n_slots)]
        self.half_life = half_life
        self.requests = 0
        self._group_depth = 0
        self._group: set[int] = set()

    def __len__(self) -> int:
        return len(self.slots)

    # --- groups ---------------------------------------------------------------
    def open_group(self) -> None:
        self._group_depth += 1

    def close_group(self) -> None:
        self._group_depth = max(0, self._group_depth - 1)
        if self._group_depth == 0:
            self._group.clear()

    # --- the policy -------------------------------------------------------------
    def value(self, index: int) -> float:
        """Tokens reused from the slot, halved per ``half_life`` requests since its last reuse."""
        slot = self.slots[index]
        age = (self.requests - slot.stamp) / self.half_life
        return float(slot.value * 0.5**age)

    @staticmethod
    def reusable(slot: Slot, ids: Sequence[int], starts: Sequence[int], cap: int) -> int:
        """The longest prefix of ``ids`` the slot can keep: a block start of ``ids``.

        Reuse stops at the first token that differs, at the slot's last closed
        block, and at ``cap`` (the first position whose logits the request
        reads must be evaluated again).
        """
        limit = min(common_prefix(slot.tokens, ids), slot.on_grid, cap)
        return starts[bisect.bisect_right(starts, limit) - 1]

    def _shared_elsewhere(self, index: int, length: int) -> bool:
        """Does another slot hold the first ``length`` tokens of this one too?"""
        mine = self.slots[index].tokens
        return any(
            j != index and len(s.tokens) >= length and common_prefix(s.tokens, mine) >= length
            for j, s in enumerate(self.slots)
        )

    def _worth_cutting(self, index: int, reuse: int) -> bool:
        slot = self.slots[index]
        if reuse <= 0:
            return False
        if reuse >= len(slot.tokens) - reuse:
            return True
        return index not in self._group and not self._shared_elsewhere(index, reuse)

    def choose(self, ids: Sequence[int], starts: Sequence[int], cap: int) -> Choice:
        """The slot for a request whose block starts are ``starts`` (see the module docstring)."""
        reuse = [self.reusable(s, ids, starts, cap) for s in self.slots]
        candidates = [i for i in range(len(self.slots)) if self._worth_cutting(i, reuse[i])]
        if candidates:
            best = max(candidates, key=lambda i: (reuse[i], self.value(i), self.slots[i].last_used))
            return Choice(best, reuse[best])
        for i, slot in enumerate(self.slots):
            if slot.empty:
                return Choice(i, 0)
        others = [i for i in range(len(self.slots)) if i not in self._group]
        pool = others or list(range(len(self.slots)))
        victim = min(pool, key=lambda i: (self.value(i), self.slots[i].last_used))
        # The victim is rewritten anyway: keep whatever prefix of it the request shares.
        return Choice(victim, reuse[victim])

    def record(self, index: int, reuse: int, tokens: list[int], on_grid: int) -> None:
        """Slot ``index`` now holds ``tokens``, of which the first ``reuse`` came from the cache."""
        slot = self.slots[index]
        aged = self.value(index) if reuse > 0 else 0.0
        if self._group_depth:
            aged = max(aged, GROUP_PRIOR)
        self.requests += 1
        slot.tokens = tokens
        slot.on_grid = on_grid
        slot.value = aged + reuse
        slot.stamp = self.requests
        slot.last_used = self.requests
        if self._group_depth:
            self._group.add(index)

    def clear(self) -> None:
        for slot in self.slots:
            slot.clear()
        self._group.clear()
