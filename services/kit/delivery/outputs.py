"""What a handler gives back: the events it emits, where they go and how they are keyed.

Handlers are plain typed functions ``async def f(event: In) -> Emit | list[Emit] | None``
that never see Kafka; the runner publishes what they return.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from google.protobuf.message import Message

M = TypeVar("M", bound=Message)
CONTENT_TYPE = "application/x-protobuf"


@dataclass(frozen=True, slots=True)
class Emit:
    """One output event: where it goes, what it is, how it is keyed."""

    topic: str
    message: Message
    key: str


Handler = Callable[[M], Awaitable["Emit | Sequence[Emit] | None"]]


def outputs_of(result: Emit | Sequence[Emit] | None) -> list[Emit]:
    """A handler's result as a list: nothing, one output or several."""
    if result is None:
        return []
    if isinstance(result, Emit):
        return [result]
    return list(result)


def headers_for(message: Message) -> dict[str, str]:
    """The headers every reag event carries: its encoding and its message type."""
    return {"content-type": CONTENT_TYPE, "x-reag-type": type(message).__name__}
