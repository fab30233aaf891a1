"""A broker that restarted with no memory (a new cluster id) has every consumer of the service
rewound to the start of its partitions; a reconnection to the same broker changes nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from services.kit.epoch import BrokerEpochWatch
from services.kit.settings import KafkaSettings
from shell.stack.tansu import broker_command


@dataclass
class FakeConsumer:
    partitions: set[str]
    rewound: list[tuple[str, ...]] = field(default_factory=list)

    def assignment(self) -> set[str]:
        return self.partitions

    async def seek_to_beginning(self, *partitions: str) -> bool:
        self.rewound.append(tuple(sorted(partitions)))
        return True


@dataclass
class FakeSubscriber:
    consumer: FakeConsumer | None


@dataclass
class FakeBroker:
    subscribers: list[FakeSubscriber]


async def test_a_new_cluster_id_rewinds_every_assigned_consumer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    working, idle = FakeConsumer({"t-0", "t-1"}), FakeConsumer(set())
    broker: Any = FakeBroker([FakeSubscriber(working), FakeSubscriber(idle), FakeSubscriber(None)])
    watch = BrokerEpochWatch(broker, KafkaSettings(bootstrap_servers="127.0.0.1:1"))
    ids = iter(["reag-a", None, "reag-a", "reag-b", "reag-b"])

    async def cluster_id() -> str | None:
        return next(ids)

    monkeypatch.setattr(watch, "cluster_id", cluster_id)
    seen = [await watch.check() for _ in range(5)]
    assert seen == [False, False, False, True, False]  # unreachable and reconnected: nothing
    assert working.rewound == [("t-0", "t-1")]
    assert idle.rewound == []


def test_each_embedded_broker_start_has_a_cluster_id_of_its_own() -> None:
    def cluster(argv: list[str]) -> str:
        return argv[argv.index("--cluster-id") + 1]

    assert cluster(broker_command(9092)) != cluster(broker_command(9092))
