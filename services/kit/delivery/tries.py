"""One event's tries: the backoff between them and when transient faults have had enough.

The state is per event, not per partition: today a partition waits as a whole behind
its failed event, but with several events in flight (issue 27) each keeps its own count,
its own first fault and its own place in the park.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tenacity import AsyncRetrying, RetryCallState, wait_exponential_jitter

from services.kit.faults import Transient
from services.kit.settings import DeliverySettings


def backoff(settings: DeliverySettings) -> Callable[[int], float]:
    """Seconds to wait before retry ``n`` (1-based): tenacity's exponential wait with jitter."""
    wait = wait_exponential_jitter(
        initial=settings.retry_initial_s,
        max=settings.retry_max_s,
        jitter=settings.retry_initial_s / 2,
    )
    retrying = AsyncRetrying()

    def delay(attempt: int) -> float:
        state = RetryCallState(retrying, fn=None, args=(), kwargs={})
        state.attempt_number = attempt
        return float(wait(state))

    return delay


def record_bytes(record: Any) -> int:
    """What a record holds in memory: its value, key and headers."""
    headers = sum(len(k) + len(v) for k, v in record.headers or ())
    return len(record.value or b"") + len(record.key or b"") + headers


@dataclass(slots=True)
class EventState:
    """What delivery knows of one event it has not finished: its tries and its park stay."""

    record: Any
    size: int
    faults: int = 0  # tries that met a transient fault
    first_fault: float | None = None
    last_fault: Transient | None = None
    letter_due: bool = False  # the faults had enough: the next try writes the dead letter
    parked_since: float | None = None
    park_tries: int = 0
    due: float = 0.0

    @classmethod
    def of(cls, record: Any) -> EventState:
        return cls(record, record_bytes(record))

    def fault(self, fault: Transient, now: float) -> None:
        self.faults += 1
        self.last_fault = fault
        if self.first_fault is None:
            self.first_fault = now

    def waited_s(self, now: float) -> float:
        return 0.0 if self.first_fault is None else now - self.first_fault

    def exhausted(self, settings: DeliverySettings, now: float) -> bool:
        """Whether transient faults have had this event long enough: after
        ``max_transient_attempts`` failed tries, or ``max_transient_s`` after the first."""
        if self.first_fault is None:
            return False
        return (
            self.faults >= settings.max_transient_attempts
            or now - self.first_fault >= settings.max_transient_s
        )
