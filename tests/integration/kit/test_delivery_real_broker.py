"""Transient faults and apps not loaded yet, over the real broker (Tansu on a socket):
the partition pauses and resumes, parked events do not hold back the others, and the
committed offset never passes an event that is not done."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from faststream.kafka import KafkaBroker, KafkaRouter
from prometheus_client import REGISTRY
from sqlalchemy import exc as sa_exc
from typer.testing import CliRunner

from reag.llm.base import RateLimitedError
from reag.v1 import events_pb2 as pb
from services.kit.broker import make_broker
from services.kit.delivery import Delivery, Emit, consume
from services.kit.settings import DeliverySettings, KafkaSettings
from services.kit.testing import produce_events, read_values, until
from services.kit.topology import DLQ, ServiceSpec
from shell.cli.main import app as reag

pytestmark = [pytest.mark.kafka]

DELIVERY = DeliverySettings(retry_initial_s=0.3, retry_max_s=1.0, park_s=120.0)


def traffic(case: str, app: str = "demo") -> pb.Traffic:
    event = pb.Traffic(query="q", actual_response="r")
    event.meta.case_id, event.meta.app, event.meta.schema_version = case, app, 1
    return event


class Service:
    """One consume()-wired service: traffic in, an intention per event out."""

    def __init__(
        self,
        bootstrap: str,
        suffix: str,
        fail: Callable[[pb.Traffic], None],
        app_known: Callable[[str], bool] | None = None,
        *,
        delivery: DeliverySettings = DELIVERY,
        scrub: Callable[[bytes], bytes] | None = None,
    ) -> None:
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
            app_known=app_known,
            scrub=scrub,
            delivery=delivery,
            registry=self.flows,
        )
        async def to_intention(event: pb.Traffic) -> Emit:
            fail(event)
            intention = pb.Intention(query=event.query)
            intention.meta.CopyFrom(event.meta)
            # One key, so the outputs share a partition and are read back in the order made.
            return Emit(self.out, intention, "one-partition")

        self.bootstrap = bootstrap
        self.broker: KafkaBroker = make_broker(
            KafkaSettings(bootstrap_servers=bootstrap), self.name
        )
        self.broker.include_router(router)

    @property
    def group(self) -> str:
        return f"{self.name}-{self.inp}"

    async def outputs(self, n: int, timeout_s: float = 60.0) -> list[str]:
        values = await read_values(
            self.bootstrap, self.out, lambda vs: len(vs) >= n, timeout_s=timeout_s
        )
        return [pb.Intention.FromString(v).meta.case_id for v in values]

    async def letters(self) -> list[pb.DeadLetter]:
        values = await read_values(self.bootstrap, DLQ, lambda vs: False, timeout_s=3.0)
        letters = [pb.DeadLetter.FromString(v) for v in values]
        return [letter for letter in letters if letter.service == self.name]

    async def committed(self) -> int:
        """The group's committed offset on the input, summed over partitions (-1 counts 0)."""
        # A consumer that never subscribes asks the coordinator without joining the group
        # (aiokafka's admin client cannot decode Tansu's OffsetFetch answer).
        reader = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, group_id=self.group)
        await reader.start()
        try:
            partitions = reader.partitions_for_topic(self.inp) or set()
            total = 0
            for partition in partitions:
                offset = await reader.committed(TopicPartition(self.inp, partition))
                total += max(offset or 0, 0)
        finally:
            await reader.stop()
        return total

    async def committed_at_least(self, n: int, tries: int = 40) -> int:
        """The committed offset once it reaches ``n`` (commits follow outputs closely)."""
        committed = await self.committed()
        for _ in range(tries):
            if committed >= n:
                break
            await asyncio.sleep(0.25)
            committed = await self.committed()
        return committed


def _metric(name: str, labels: dict[str, str]) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_a_database_outage_pauses_the_partition_and_the_event_lands_after_it(
    kafka_bootstrap: str, topic_suffix: str
) -> None:
    pg_down = {"left": 3}

    def fail(event: pb.Traffic) -> None:
        if event.meta.case_id == "c2" and pg_down["left"]:
            pg_down["left"] -= 1
            raise sa_exc.OperationalError(
                "INSERT", {}, psycopg.OperationalError("connection refused")
            )

    service = Service(kafka_bootstrap, topic_suffix, fail)
    events = [traffic(c) for c in ("c1", "c2", "c3")]
    await produce_events(kafka_bootstrap, service.inp, events, key="one-partition")
    labels = {"service": service.name, "topic": service.inp}
    async with service.broker:
        await service.broker.start()
        cases = await service.outputs(3)
        assert await until(lambda: not service.flows[service.inp].paused, 10)
        committed = await service.committed_at_least(3)
    # The partition waited: c3 came after c2, none was lost, none dead-lettered.
    assert cases == ["c1", "c2", "c3"]
    assert await service.letters() == []
    assert _metric("reag_transient_retries_total", {**labels, "kind": "database"}) == 3
    assert _metric("reag_paused_partitions", labels) == 0
    assert committed == 3


async def test_an_app_not_loaded_parks_holds_the_commit_and_flows_when_its_corpus_appears(
    kafka_bootstrap: str, topic_suffix: str
) -> None:
    loaded = {"demo"}

    def fine(event: pb.Traffic) -> None:
        return None

    service = Service(kafka_bootstrap, topic_suffix, fine, app_known=lambda app: app in loaded)
    events = [traffic("l1", "late"), traffic("d1"), traffic("d2")]
    await produce_events(kafka_bootstrap, service.inp, events, key="one-partition")
    async with service.broker:
        await service.broker.start()
        first = await service.outputs(2)
        flow = service.flows[service.inp]
        assert flow.parked == 1
        # d1 and d2 are done but l1 (offset 0) is not: nothing may be committed past it.
        assert await service.committed() == 0
        loaded.add("late")
        cases = await service.outputs(3)
        assert await until(lambda: flow.parked == 0, 30)
        committed = await service.committed_at_least(3)
    assert first == ["d1", "d2"]  # the other app's events were not held back
    assert sorted(cases) == ["d1", "d2", "l1"]
    assert await service.letters() == []
    assert committed == 3
    exits = {"service": service.name, "topic": service.inp, "outcome": "processed"}
    assert _metric("reag_park_exits_total", exits) == 1


async def test_a_dead_letter_too_large_for_the_producer_is_cut_and_the_partition_moves_on(
    kafka_bootstrap: str, topic_suffix: str
) -> None:
    def fine(event: pb.Traffic) -> None:
        return None

    # An oversized event's letter keeps its bytes; a scrub that doubles them (redaction can
    # nearly double an event) makes the letter larger than the producer's 1 MiB request.
    # Today's main returns that refusal as a transient fault and retries it forever.
    service = Service(kafka_bootstrap, topic_suffix, fine, scrub=lambda data: data + data)
    big = pb.Traffic(query="q" * 600_000, actual_response="r")
    big.meta.case_id, big.meta.app, big.meta.schema_version = "big", "demo", 1
    await produce_events(kafka_bootstrap, service.inp, [big, traffic("after")], "one-partition")
    async with service.broker:
        await service.broker.start()
        cases = await service.outputs(1)
        committed = await service.committed_at_least(2)
    (letter,) = await service.letters()
    assert cases == ["after"]  # the event behind the big one was not held back
    assert committed == 2
    assert letter.error_type == "oversized"
    assert 0 < len(letter.value) < 2 * big.ByteSize()
    assert f"of {2 * big.ByteSize()} bytes kept; not replayable" in letter.reason
    cut = {"service": service.name, "topic": service.inp}
    assert _metric("reag_dead_letters_cut_total", cut) == 1


def reag_cli(*args: str) -> Any:
    """The CLI in a thread: its commands run their own event loop."""
    return asyncio.to_thread(CliRunner().invoke, reag, list(args))


async def test_an_event_whose_transient_faults_outlast_the_cap_is_dead_lettered_and_replayed(
    kafka_bootstrap: str, topic_suffix: str
) -> None:
    broken = {"on": True}

    def fail(event: pb.Traffic) -> None:
        if broken["on"] and event.meta.case_id == "slow":
            raise RateLimitedError("the provider times out on this event's prompt")

    capped = DELIVERY.model_copy(update={"max_transient_attempts": 2})
    service = Service(kafka_bootstrap, topic_suffix, fail, delivery=capped)
    await produce_events(
        kafka_bootstrap, service.inp, [traffic("slow"), traffic("next")], "one-partition"
    )
    async with service.broker:
        await service.broker.start()
        first = await service.outputs(1)
        committed = await service.committed_at_least(2)
        (letter,) = await service.letters()
        assert letter.error_type == "transient_exhausted"
        assert "RateLimitedError" in letter.reason
        broken["on"] = False  # the cause is fixed
        replayed = await reag_cli(
            "dlq",
            "replay",
            "--reason",
            "transient_exhausted",
            "--service",
            service.name,
            "--bootstrap",
            kafka_bootstrap,
            "--json",
        )
        assert replayed.exit_code == 0, replayed.output
        assert '"replayed": 1' in replayed.output
        cases = await service.outputs(2)
    assert first == ["next"]  # the capped event stopped holding its partition
    assert committed == 2
    assert cases == ["next", "slow"]
