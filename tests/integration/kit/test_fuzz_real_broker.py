"""A sample of the fuzz payloads through the real broker (Tansu, on a socket).

The same consumers and payloads as ``tests/unit/services/test_fuzz_consumers.py``,
``REAG_FUZZ_BROKER_SAMPLE`` per topic (20 in CI; ``make fuzz`` sends 50, which took
7 minutes on a busy 2-core machine), each followed by a good
event, all produced before the services start: every payload must come back
as exactly one dead letter with a poison reason, and every good event must be
processed. Unlabelled protobufs of another type are left out here (they may
parse as valid events, so their count of dead letters is not known in
advance); labelled ones are in.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer
from hypothesis import HealthCheck, given, settings
from prometheus_client import REGISTRY

from reag.v1 import events_pb2 as pb
from services.kit.broker import make_broker
from services.kit.settings import KafkaSettings
from services.kit.testing import read_values
from services.kit.topology import DLQ, OTLP_SPANS
from tests.fuzz_consumers import (
    CANARY,
    MAX_REASON_CHARS,
    POISON,
    Consumer,
    Fuzz,
    build_consumers,
    payloads,
)

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

SAMPLE = int(os.environ.get("REAG_FUZZ_BROKER_SAMPLE", "20"))


def sample(consumer: Consumer) -> list[Fuzz]:
    drawn: list[Fuzz] = []

    @settings(
        max_examples=SAMPLE, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(fuzz=payloads(consumer.payload).filter(lambda f: not f.may_flow))
    def collect(fuzz: Fuzz) -> None:
        drawn.append(fuzz)

    collect()
    return drawn[:SAMPLE]


def processed(service: str) -> float:
    value = REGISTRY.get_sample_value("reag_stage_seconds_count", {"service": service})
    return value or 0.0


async def until_processed(wanted: dict[str, float], *, timeout_s: float) -> None:
    """Wait until each service has handled ``wanted`` events, or the time is up (the
    assertion after it then says which service fell short)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while any(processed(s) < n for s, n in wanted.items()):
        if asyncio.get_running_loop().time() > deadline:
            return
        await asyncio.sleep(0.2)


async def test_a_sample_of_hostile_payloads_dead_letters_over_the_real_broker(
    kafka_bootstrap: str, topic_suffix: str, tmp_path: Path
) -> None:
    # Each service on topics of its own (the elicitor's two routers apart too), so a good
    # event's output stays where it lands instead of flowing on through the next service;
    # a service's consumers share its router, as in production.
    consumers: list[Consumer] = []
    routers = []
    suffixes: dict[int, str] = {}
    sets: dict[str, list[Consumer]] = {}
    for index, reference in enumerate(build_consumers("-order", tmp_path)):
        group = reference.service + ("-otlp" if reference.topic == OTLP_SPANS else "")
        suffix = f"-{topic_suffix}-{group}"
        if group not in sets:
            state = tmp_path / group
            state.mkdir()
            sets[group] = build_consumers(suffix, state)
        consumer = sets[group][index]
        consumers.append(consumer)
        suffixes[id(consumer)] = suffix
        if consumer.router not in routers:
            routers.append(consumer.router)
    fuzzed = {id(c): sample(c) for c in consumers}
    producer = AIOKafkaProducer(
        bootstrap_servers=kafka_bootstrap, acks="all", max_request_size=1_048_576
    )
    await producer.start()
    try:
        for consumer in consumers:
            topic = consumer.topic + suffixes[id(consumer)]
            for n, fuzz in enumerate(fuzzed[id(consumer)]):
                headers = [(k, v.encode()) for k, v in fuzz.headers.items()]
                await producer.send_and_wait(topic, fuzz.value, key=b"fuzz", headers=headers)
                await producer.send_and_wait(topic, consumer.good(f"good-{n}"), key=b"good")
    finally:
        await producer.stop()
    before = {c.service: processed(c.service) for c in consumers}
    expected_good = Counter(c.service for c in consumers)

    broker = make_broker(
        KafkaSettings(bootstrap_servers=kafka_bootstrap, max_event_bytes=16_384), "fuzz"
    )
    for router in routers:
        broker.include_router(router)
    wanted = SAMPLE * len(consumers)

    def enough(values: list[bytes]) -> bool:
        mine = [pb.DeadLetter.FromString(v) for v in values]
        return sum(topic_suffix in letter.topic for letter in mine) >= wanted

    async with broker:
        await broker.start()
        raw = await read_values(kafka_bootstrap, DLQ, enough, timeout_s=240)
        outputs = {
            id(c): await read_values(
                kafka_bootstrap,
                c.output,
                lambda vs: len(vs) >= SAMPLE,
                timeout_s=120,
            )
            for c in consumers
            if c.output is not None
        }
        # With events in flight a good event may finish after the letters behind it were
        # written; a consumer with no output (the calibrator) is waited for by its count.
        await until_processed(
            {s: before[s] + SAMPLE * n for s, n in expected_good.items()}, timeout_s=120
        )
    letters = [pb.DeadLetter.FromString(v) for v in raw]
    for consumer in consumers:
        topic = consumer.topic + suffixes[id(consumer)]
        mine = [letter for letter in letters if letter.topic == topic]
        sent = fuzzed[id(consumer)]
        print(
            f"\nfuzz over the broker {consumer.name}: {len(sent)} payloads, "
            f"{len(mine)} dead letters, {len(outputs.get(id(consumer), []))} outputs of "
            f"{len(sent)} good events"
        )
        assert len(mine) == len(sent), consumer.name
        by_offset = sorted(mine, key=lambda letter: letter.offset)
        for fuzz, letter in zip(sent, by_offset, strict=True):
            assert letter.service == consumer.service
            assert letter.error_type in (fuzz.expect or POISON), (fuzz.kind, letter.error_type)
            assert letter.reason
            assert len(letter.reason) <= MAX_REASON_CHARS
            assert CANARY not in letter.reason
        if consumer.output is not None:
            assert len(outputs[id(consumer)]) >= len(sent), consumer.name
    for service, n_topics in expected_good.items():
        assert processed(service) - before[service] == SAMPLE * n_topics, service
