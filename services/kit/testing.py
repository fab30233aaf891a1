"""Producing and reading reag events over a real broker, for tests and tools.

Reads use no consumer group: every partition is read from the start directly,
so there is no group join to wait for (about 3–5 s on the embedded broker).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from google.protobuf.message import Message

from reag.ids import digits_as_letters

M = TypeVar("M", bound=Message)


async def produce_events(
    bootstrap: str,
    topic: str,
    events: Sequence[Message | bytes],
    key: str | Callable[[Any], str],
) -> None:
    """Publish with acks=all, in order; ``key`` is one key or a function of the event."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for event in events:
            value = event if isinstance(event, bytes) else event.SerializeToString()
            k = key if isinstance(key, str) else key(event)
            await producer.send_and_wait(topic, value, key=k.encode())
    finally:
        await producer.stop()


async def read_values(
    bootstrap: str,
    topic: str,
    done: Callable[[list[bytes]], bool],
    *,
    timeout_s: float = 40.0,
) -> list[bytes]:
    """Every value on ``topic`` from the start, until ``done(values)`` or the time is up."""
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id=None
    )
    await consumer.start()
    values: list[bytes] = []
    try:
        async with asyncio.timeout(timeout_s):
            while not done(values):
                batch = await consumer.getmany(timeout_ms=300)
                values += [r.value for records in batch.values() for r in records]
    except TimeoutError:
        pass
    finally:
        await consumer.stop()
    return values


async def read_events(
    bootstrap: str,
    topic: str,
    event_type: type[M],
    done: Callable[[list[M]], bool],
    *,
    timeout_s: float = 40.0,
) -> list[M]:
    """``read_values``, decoded as ``event_type``."""

    def decode(values: list[bytes]) -> list[M]:
        return [event_type.FromString(v) for v in values]

    values = await read_values(bootstrap, topic, lambda vs: done(decode(vs)), timeout_s=timeout_s)
    return decode(values)


async def until(
    condition: Callable[[], bool], timeout_s: float = 30.0, every_s: float = 0.05
) -> bool:
    """Whether ``condition()`` came true within ``timeout_s``, checked every ``every_s``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not condition():
        if loop.time() > deadline:
            return False
        await asyncio.sleep(every_s)
    return True


def run_tag(n: int = 6) -> str:
    """A random tag for a run's case ids, letters only.

    The redactor gives a producer's case id that reads as PII a pseudonym
    (issue 23), and a random hex tag beside a case number reads as a phone
    number often enough ("kill-ledger-650134-017": 130 of 2,000 such ids), so
    a test or bench waiting for its own case ids would wait for one that
    never ends.
    """
    return digits_as_letters(uuid.uuid4().hex[:n])
