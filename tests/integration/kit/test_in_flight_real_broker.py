"""Many events in flight, over the real broker (Tansu on a socket; issue 27): a rebalance
during in-flight work commits nothing past an unfinished event, a transient fault on one
partition does not stall the others, and a crash with events in flight loses none."""

from __future__ import annotations

import asyncio
from collections import Counter

import psycopg
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from faststream.kafka import KafkaBroker, KafkaRouter
from sqlalchemy import exc as sa_exc

from reag.v1 import events_pb2 as pb
from services.kit.broker import make_broker
from services.kit.delivery import Delivery, Emit, consume
from services.kit.settings import DeliverySettings, KafkaSettings
from services.kit.testing import read_values, until
from services.kit.topology import ServiceSpec

pytestmark = [pytest.mark.kafka]

DELIVERY = DeliverySettings(retry_initial_s=0.3, retry_max_s=1.0, max_in_flight=16)


def traffic(case: str) -> pb.Traffic:
    event = pb.Traffic(query="q", actual_response="r")
    event.meta.case_id, event.meta.app, event.meta.schema_version = case, "demo", 1
    return event


class Handler:
    """What the service does per event: wait at a gate or fail, by case id; counts calls."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.gates: dict[tuple[str, int], asyncio.Event] = {}  # (case, call n) -> gate
        self.failing: set[str] = set()
        self.returned: Counter[str] = Counter()

    def gate(self, case: str, call: int) -> asyncio.Event:
        return self.gates.setdefault((case, call), asyncio.Event())

    async def __call__(self, event: pb.Traffic) -> None:
        case = event.meta.case_id
        self.calls[case] += 1
        gate = self.gates.get((case, self.calls[case]))
        if gate is not None:
            await gate.wait()
        if case in self.failing:
            raise sa_exc.OperationalError("INSERT", {}, psycopg.OperationalError("refused"))
        self.returned[case] += 1


class Service:
    """One consume()-wired instance: traffic in, an intention per event out, keyed by case."""

    def __init__(self, bootstrap: str, suffix: str, handler: Handler) -> None:
        self.name = f"svc-{suffix}"
        self.inp, self.out = f"in-{suffix}", f"out-{suffix}"
        spec = ServiceSpec(self.name, consumes=(self.inp,), produces=(self.out,))
        router = KafkaRouter()
        self.flows: dict[str, Delivery] = {}

        @consume(
            router,
            spec,
            self.inp,
            pb.Traffic,
            max_event_bytes=4096,
            delivery=DELIVERY,
            registry=self.flows,
        )
        async def to_intention(event: pb.Traffic) -> Emit:
            await handler(event)
            intention = pb.Intention(query=event.query)
            intention.meta.CopyFrom(event.meta)
            return Emit(self.out, intention, event.meta.case_id)

        self.bootstrap = bootstrap
        self.broker: KafkaBroker = make_broker(
            KafkaSettings(bootstrap_servers=bootstrap), self.name
        )
        self.broker.include_router(router)

    @property
    def flow(self) -> Delivery:
        return self.flows[self.inp]

    async def outputs(self, done: int, timeout_s: float = 60.0) -> list[str]:
        """Case ids of the outputs, once there are ``done`` of them."""
        values = await read_values(
            self.bootstrap, self.out, lambda vs: len(vs) >= done, timeout_s=timeout_s
        )
        return [pb.Intention.FromString(v).meta.case_id for v in values]

    async def committed(self, partitions: int) -> list[int]:
        """The group's committed offset of each input partition (none: 0)."""
        reader = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap, group_id=f"{self.name}-{self.inp}"
        )
        await reader.start()
        try:
            offsets = [
                await reader.committed(TopicPartition(self.inp, p)) for p in range(partitions)
            ]
        finally:
            await reader.stop()
        return [max(offset or 0, 0) for offset in offsets]


async def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
    finally:
        await admin.close()


async def produce(bootstrap: str, topic: str, events: list[tuple[int, str]]) -> None:
    """(partition, case id) pairs, in order, keyed by the case id."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for partition, case in events:
            await producer.send_and_wait(
                topic,
                traffic(case).SerializeToString(),
                key=case.encode(),
                partition=partition,
            )
    finally:
        await producer.stop()


async def test_a_rebalance_during_in_flight_work_commits_nothing_past_an_unfinished_event(
    kafka_bootstrap: str, topic_suffix: str
) -> None:
    handler = Handler()
    first_try = handler.gate("slow", 1)
    later_tries = handler.gates[("slow", 2)] = handler.gates[("slow", 3)] = asyncio.Event()
    one = Service(kafka_bootstrap, topic_suffix, handler)
    await create_topic(kafka_bootstrap, one.inp, 1)
    await produce(kafka_bootstrap, one.inp, [(0, "slow"), (0, "b"), (0, "c")])
    async with one.broker:
        await one.broker.start()
        assert sorted(await one.outputs(2)) == ["b", "c"]  # done while "slow" is in flight
        assert await one.committed(1) == [0]  # offset 0 is unfinished
        # A second instance joins, then leaves: two rebalances, and the partition is the
        # first instance's again, in a new epoch, read again from the commit (offset 0).
        two = Service(kafka_bootstrap, topic_suffix, handler)
        async with two.broker:
            await two.broker.start()
            assert await until(lambda: handler.calls["b"] >= 2, 90)
            two.flow.abandon()
        assert await until(lambda: handler.calls["b"] >= 3, 90)
        assert await until(lambda: handler.returned["c"] >= 3, 30)
        # The first copy of "slow" finishes now, in a revoked epoch, while the new epoch's
        # copy of it (the same offset) is not done: the commit may not move.
        first_try.set()
        assert await until(lambda: handler.returned["slow"] == 1, 30)
        assert await until(lambda: handler.calls["slow"] >= 2, 30)
        assert await one.committed(1) == [0]
        later_tries.set()
        assert await until(lambda: handler.returned["slow"] >= 2, 30)
        committed = [0]
        for _ in range(60):
            committed = await one.committed(1)
            if committed == [3]:
                break
            await asyncio.sleep(0.25)
    assert committed == [3]
    assert set(await one.outputs(5)) == {"slow", "b", "c"}


async def test_a_transient_fault_on_one_partition_does_not_stall_the_others(
    kafka_bootstrap: str, topic_suffix: str
) -> None:
    handler = Handler()
    handler.failing.add("stuck")
    service = Service(kafka_bootstrap, topic_suffix, handler)
    await create_topic(kafka_bootstrap, service.inp, 2)
    others = [f"b{i}" for i in range(6)]
    await produce(
        kafka_bootstrap,
        service.inp,
        [(0, "stuck"), (0, "a1"), *((1, case) for case in others)],
    )
    tp0 = TopicPartition(service.inp, 0)
    async with service.broker:
        await service.broker.start()
        # Partition 1 flows while partition 0's first event keeps meeting the fault.
        assert set(await service.outputs(len(others))) >= set(others)
        assert await until(lambda: service.flow.paused == {tp0}, 30)
        assert handler.calls["stuck"] >= 1
        assert handler.returned["stuck"] == 0
        committed = await service.committed(2)
        for _ in range(40):
            if committed[1] == len(others):
                break
            await asyncio.sleep(0.25)
            committed = await service.committed(2)
        assert committed == [0, len(others)]  # partition 0 holds at its unfinished event
        handler.failing.clear()  # the database is back
        assert await until(lambda: handler.returned["stuck"] == 1, 30)
        assert await until(lambda: not service.flow.paused, 30)
        for _ in range(40):
            committed = await service.committed(2)
            if committed == [2, len(others)]:
                break
            await asyncio.sleep(0.25)
    assert committed == [2, len(others)]
    assert sorted(await service.outputs(len(others) + 2)) == sorted(["stuck", "a1", *others])


async def test_a_crash_with_events_in_flight_loses_none(
    kafka_bootstrap: str, topic_suffix: str
) -> None:
    handler = Handler()
    cases = [f"c{i:02d}" for i in range(12)]
    hung = {"c03", "c07", "c10"}  # in flight when the instance dies
    for case in hung:
        handler.gate(case, 1)  # never set: the first instance never finishes them
    first = Service(kafka_bootstrap, topic_suffix, handler)
    await create_topic(kafka_bootstrap, first.inp, 2)
    await produce(kafka_bootstrap, first.inp, [(i % 2, case) for i, case in enumerate(cases)])
    async with first.broker:
        await first.broker.start()
        assert await until(lambda: sum(handler.returned.values()) == len(cases) - len(hung), 60)
        assert first.flow.in_flight == len(hung)
        first.flow.abandon()  # killed: its unfinished work is gone and publishes nothing
    # A new instance reads from the commits.
    second = Service(kafka_bootstrap, topic_suffix, handler)
    async with second.broker:
        await second.broker.start()
        assert await until(lambda: all(handler.returned[c] >= 1 for c in hung), 90)
        outputs = await second.outputs(len(cases))
    # None lost; finished but uncommitted events may come again (a store keyed by case, as
    # the ledger is, keeps one of each: tests/integration/ledger).
    assert set(outputs) == set(cases)
    again = [case for case, n in Counter(outputs).items() if n > 1]
    assert not set(again) & hung  # only events that had finished came twice
