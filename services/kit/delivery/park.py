"""The park: events whose app has no corpus yet, held per partition, bounded by count and bytes.

A parked event holds back its partition's committed offset (the first parked offset),
so a crash redelivers it; the bound on bytes as well as count keeps a park of large
events inside the pod's memory (1,000 events of 1 MiB would be 1 GiB).
"""

from __future__ import annotations

from aiokafka import TopicPartition

from services.kit.delivery.tries import EventState


class Park:
    """Parked events keyed by partition and offset (by arrival under the in-memory broker)."""

    def __init__(self, max_events: int, max_bytes: int) -> None:
        self._max_events, self._max_bytes = max_events, max_bytes
        self._events: dict[TopicPartition, dict[int, EventState]] = {}
        self._count = 0
        self._bytes = 0

    def __len__(self) -> int:
        return self._count

    @property
    def bytes(self) -> int:
        return self._bytes

    def admits(self, size: int) -> bool:
        """Whether an event of ``size`` bytes fits; an empty park takes any one event."""
        if not self._count:
            return True
        return self._count < self._max_events and self._bytes + size <= self._max_bytes

    def add(self, tp: TopicPartition, key: int, state: EventState) -> None:
        self._events.setdefault(tp, {})[key] = state
        self._count += 1
        self._bytes += state.size

    def get(self, tp: TopicPartition, key: int) -> EventState | None:
        entries = self._events.get(tp)
        return entries.get(key) if entries else None

    def remove(self, tp: TopicPartition, key: int) -> None:
        entries = self._events.get(tp)
        state = entries.pop(key, None) if entries is not None else None
        if state is None:
            return
        self._count -= 1
        self._bytes -= state.size
        if not entries:
            del self._events[tp]

    def drop(self, tp: TopicPartition) -> int:
        """Forget a partition's parked events; returns how many."""
        entries = self._events.pop(tp, {})
        self._count -= len(entries)
        self._bytes -= sum(state.size for state in entries.values())
        return len(entries)

    def partitions(self) -> set[TopicPartition]:
        return set(self._events)

    def first(self, tp: TopicPartition) -> int | None:
        """The lowest parked offset of ``tp``: its committed offset may not pass it."""
        entries = self._events.get(tp)
        return min(entries) if entries else None

    def due(self, now: float) -> list[tuple[TopicPartition, int]]:
        """Parked events whose next try has come, by partition and offset."""
        return sorted(
            (
                (tp, key)
                for tp, entries in self._events.items()
                for key, state in entries.items()
                if state.due <= now
            ),
            key=lambda item: (item[0].partition, item[1]),
        )

    def soonest(self) -> float:
        return min(state.due for entries in self._events.values() for state in entries.values())
