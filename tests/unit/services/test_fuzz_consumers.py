"""Hostile payloads through every consumer's handling code, in process (TestKafkaBroker).

For each (service, topic) of ``topology.SERVICES``, hypothesis draws payloads
(random bytes, wrong schema versions, missing and huge fields, invalid UTF-8,
valid protobufs of another type, with and without their type header) and each
one is followed by a good event. Checked for every example: the payload became
exactly one dead letter with a poison reason that is short and quotes no user
or model text (or, for an unlabelled protobuf of another type that parses as a
valid event, it was processed like one), nothing was published for it, and the
good event after it was processed without a dead letter.

``REAG_FUZZ_EXAMPLES`` sets the examples per topic: 50 in CI (about 30 s for all
15 topics); ``make fuzz`` runs the full 1,000 per topic, which took tens of
minutes on a busy 2-core machine (the ledger's topics are slowest: a SQLite
write per good event). The per-topic counts are printed (``pytest -s``): payloads,
dead letters, and the longest handling of one payload in CPU seconds
(``time.process_time``); docs/chaos.md keeps the figures.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest
from faststream.kafka import KafkaBroker, KafkaMessage, TestKafkaBroker
from hypothesis import HealthCheck, given, settings
from prometheus_client import REGISTRY

from reag.v1 import events_pb2 as pb
from services.kit.topology import DLQ, SERVICES
from tests.fuzz_consumers import (
    CANARY,
    MAX_REASON_CHARS,
    POISON,
    Consumer,
    Fuzz,
    build_consumers,
    payloads,
)

EXAMPLES = int(os.environ.get("REAG_FUZZ_EXAMPLES", "50"))
PAIRS = [(s.name, t) for s in SERVICES.values() for t in s.consumes]


class Sink:
    """Dead letters (with their headers) and the consumer's outputs, as they arrive."""

    def __init__(self, broker: KafkaBroker, output: str | None) -> None:
        self.letters: list[tuple[pb.DeadLetter, dict[str, Any]]] = []
        self.outputs = 0

        @broker.subscriber(DLQ, group_id="fuzz-sink-dlq")
        async def keep_letter(body: bytes, message: KafkaMessage) -> None:
            self.letters.append((pb.DeadLetter.FromString(body), dict(message.headers)))

        if output is not None:

            @broker.subscriber(output, group_id="fuzz-sink-out")
            async def keep_output(_body: bytes) -> None:
                self.outputs += 1


def processed(service: str) -> float:
    """Events the service handled without a dead letter (``consume`` observes each)."""
    value = REGISTRY.get_sample_value("reag_stage_seconds_count", {"service": service})
    return value or 0.0


def check_letter(consumer: Consumer, suffix: str, fuzz: Fuzz, letter: pb.DeadLetter) -> None:
    assert letter.service == consumer.service
    assert letter.topic == consumer.topic + suffix
    assert letter.error_type in (fuzz.expect or POISON), (fuzz.kind, letter.error_type)
    assert letter.reason, fuzz.kind
    assert len(letter.reason) <= MAX_REASON_CHARS, (fuzz.kind, letter.reason[:200])
    assert CANARY not in letter.reason, (fuzz.kind, letter.reason)
    if not consumer.scrubbed:
        assert letter.value == fuzz.value


async def feed(
    test_broker: Any, consumer: Consumer, sink: Sink, suffix: str, fuzz: Fuzz, case: str
) -> None:
    topic = consumer.topic + suffix
    letters, outputs, done = len(sink.letters), sink.outputs, processed(consumer.service)
    # CPU, not wall-clock, seconds: what one payload costs the process (issue 23's goal).
    started = time.process_time()
    await test_broker.publish(fuzz.value, topic, key=b"fuzz", headers=fuzz.headers)
    consumer.longest_cpu_s = max(consumer.longest_cpu_s, time.process_time() - started)
    consumer.counts["examples"] += 1
    new = sink.letters[letters:]
    if fuzz.may_flow and not new:
        assert processed(consumer.service) == done + 1, fuzz.kind  # handled, not dropped
        consumer.counts["processed_bad"] += 1
    else:
        assert len(new) == 1, (fuzz.kind, len(new))
        letter, headers = new[0]
        check_letter(consumer, suffix, fuzz, letter)
        assert not any(CANARY in str(v) for v in headers.values())
        assert sink.outputs == outputs, fuzz.kind  # nothing went on for a dead letter
        assert processed(consumer.service) == done
        consumer.counts["dead_letters"] += 1
    letters, outputs, done = len(sink.letters), sink.outputs, processed(consumer.service)
    await test_broker.publish(consumer.good(case), topic, key=case.encode())
    assert sink.letters[letters:] == [], [lt.reason for lt, _ in sink.letters[letters:]]
    assert processed(consumer.service) == done + 1
    if consumer.output is not None:
        assert sink.outputs > outputs
    consumer.counts["good_after"] += 1


async def wait(future: asyncio.Future[None]) -> None:
    await future


@pytest.mark.parametrize(("service", "topic"), PAIRS, ids=[f"{s}:{t}" for s, t in PAIRS])
def test_hostile_payloads_become_dead_letters_and_the_next_good_event_flows(
    service: str, topic: str, tmp_path: Path
) -> None:
    suffix = "-fuzz"
    (consumer,) = [
        c for c in build_consumers(suffix, tmp_path) if (c.service, c.topic) == (service, topic)
    ]
    broker = KafkaBroker()
    broker.include_router(consumer.router)
    sink = Sink(broker, consumer.output)
    cases = iter(range(10**9))
    queue: asyncio.Queue[tuple[Fuzz, str, asyncio.Future[None]] | None] = asyncio.Queue()

    async def serve() -> None:
        """Holds one TestKafkaBroker open and feeds it the examples hypothesis hands over."""
        async with TestKafkaBroker(broker) as test_broker:
            while (item := await queue.get()) is not None:
                fuzz, case, answer = item
                try:
                    await feed(test_broker, consumer, sink, suffix, fuzz, case)
                except BaseException as exc:  # noqa: BLE001  handed to the example to raise
                    answer.set_exception(exc)
                else:
                    answer.set_result(None)

    with asyncio.Runner() as runner:
        server = runner.get_loop().create_task(serve())

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(fuzz=payloads(consumer.payload))
        def one(fuzz: Fuzz) -> None:
            answer: asyncio.Future[None] = runner.get_loop().create_future()
            queue.put_nowait((fuzz, f"good-{next(cases)}", answer))
            runner.run(wait(answer))

        try:
            one()
        finally:
            queue.put_nowait(None)
            runner.run(wait(server))
    counts = consumer.counts
    print(
        f"\nfuzz {consumer.name}: {counts['examples']} payloads, {counts['dead_letters']} dead "
        f"letters, longest handling {consumer.longest_cpu_s:.4f} s CPU, "
        f"{counts['processed_bad']} unlabelled other-type events processed as valid, "
        f"{counts['good_after']} good events after"
    )
    assert counts["examples"] >= EXAMPLES
    assert counts["good_after"] == counts["examples"]
    assert counts["dead_letters"] + counts["processed_bad"] == counts["examples"]
