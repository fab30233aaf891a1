"""Events in flight: which offsets of each partition are unfinished, what prefix is done,
and the turn of each key (issue 27).

Kafka hands a partition's records in offset order; with several in flight, later ones
finish first. Every received offset is unfinished (here), parked (``park``) or done, so
the done prefix of a partition ends at its lowest unfinished or parked offset, or after
its highest done one when none is left: that is all a commit may cover (Confluent's
Parallel Consumer keeps the same bookkeeping).

A partition's entries carry an epoch: a revoked partition is forgotten and a later
assignment starts a new epoch, so work that was in flight when it was revoked can never
move its commit.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager

from aiokafka import TopicPartition


class InFlight:
    """Unfinished offsets and the highest done offset of each partition, by epoch."""

    def __init__(self) -> None:
        self._unfinished: dict[TopicPartition, set[int]] = {}
        self._position: dict[TopicPartition, int] = {}  # one past the highest done offset
        self._epoch: dict[TopicPartition, int] = {}
        self._first: dict[TopicPartition, int] = {}  # the first offset received in the epoch
        self._epochs = itertools.count(1)

    def __len__(self) -> int:
        return sum(len(offsets) for offsets in self._unfinished.values())

    def start(self, tp: TopicPartition, offset: int) -> int:
        """Count ``offset`` as received and unfinished; returns the partition's epoch."""
        epoch = self._epoch.get(tp)
        if epoch is None:
            epoch = self._epoch[tp] = next(self._epochs)
            self._first[tp] = offset
        self._unfinished.setdefault(tp, set()).add(offset)
        return epoch

    def current(self, tp: TopicPartition, epoch: int) -> bool:
        """Whether work begun in ``epoch`` still belongs to this instance's view of ``tp``."""
        return self._epoch.get(tp) == epoch

    def finish(self, tp: TopicPartition, offset: int, epoch: int) -> bool:
        """Count ``offset`` as done (or handed to the park); False when ``tp`` was revoked
        since the event began, and nothing may be committed for it."""
        if not self.current(tp, epoch):
            return False
        self._unfinished.get(tp, set()).discard(offset)
        self._position[tp] = max(self._position.get(tp, 0), offset + 1)
        return True

    def unfinished(self, tp: TopicPartition) -> int:
        return len(self._unfinished.get(tp, ()))

    def target(self, tp: TopicPartition, parked: int | None = None) -> int | None:
        """The offset to commit for ``tp``: the end of its done prefix, before its lowest
        unfinished or ``parked`` offset; None while that prefix is empty."""
        position = self._position.get(tp)
        if position is None:
            return None
        bounds = [position]
        unfinished = self._unfinished.get(tp)
        if unfinished:
            bounds.append(min(unfinished))
        if parked is not None:
            bounds.append(parked)
        target = min(bounds)
        return target if target > self._first.get(tp, 0) else None

    def partitions(self) -> set[TopicPartition]:
        return set(self._epoch)

    def forget(self, tp: TopicPartition) -> None:
        """Drop ``tp``: what is still in flight of it will not count when it finishes."""
        self._unfinished.pop(tp, None)
        self._position.pop(tp, None)
        self._epoch.pop(tp, None)
        self._first.pop(tp, None)


class KeyTurns:
    """Events with the same key run one after another, in the order they arrived.

    Kafka keeps a key's events in one partition, in order; the handlers rely on it where
    a later event overrides an earlier one (the ledger's records of one case, the judges'
    compacted thresholds). Events without a key do not wait.
    """

    def __init__(self) -> None:
        self._tails: dict[Hashable, asyncio.Future[None]] = {}

    def __len__(self) -> int:
        return len(self._tails)

    @asynccontextmanager
    async def turn(self, key: Hashable | None) -> AsyncIterator[None]:
        if key is None:
            yield
            return
        previous = self._tails.get(key)
        mine: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._tails[key] = mine
        try:
            if previous is not None:
                await asyncio.shield(previous)
            yield
        finally:

            def release(_: object = None) -> None:
                if not mine.done():
                    mine.set_result(None)
                if self._tails.get(key) is mine:
                    del self._tails[key]

            if previous is not None and not previous.done():
                # Cancelled while waiting: the next in line still waits for the one before.
                previous.add_done_callback(release)
            else:
                release()
