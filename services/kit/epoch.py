"""Notices a broker that came back with no memory, and rereads every partition from the start.

The embedded broker (Tansu, memory storage) forgets every topic, event and
committed offset when it restarts. The services reconnect on their own, but
their consumers keep the positions they had on the old broker and commit them
to the new one, so the first events of each recreated partition, new traffic
included, would be skipped: measured in ``python -m bench.chaos
broker-restart``, 22 of 60 cases sent after a restart never got past the
retriever. The embedded broker starts with a cluster id of its own each time
(``shell.stack.tansu.broker_command``); when the id a service sees changes,
each of its consumers seeks to the beginning of its partitions. What is read
twice is harmless (outputs are keyed by case, the ledger dedups). A production
cluster keeps its id, so this never fires there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError
from faststream.kafka import KafkaBroker

from services.kit.client_options import client_options
from services.kit.settings import KafkaSettings

log = logging.getLogger("reag.broker")


class BrokerEpochWatch:
    def __init__(self, broker: KafkaBroker, kafka: KafkaSettings, *, every_s: float = 2.0) -> None:
        self._broker = broker
        self._kafka = kafka
        self._every_s = every_s
        self._seen: str | None = None
        self._admin: AIOKafkaAdminClient | None = None
        self._task: asyncio.Task[None] | None = None

    async def cluster_id(self) -> str | None:
        """The cluster id the broker reports now; None while it cannot be reached."""
        try:
            if self._admin is None:
                self._admin = AIOKafkaAdminClient(**client_options(self._kafka))
                await self._admin.start()
            described: dict[str, Any] = await self._admin.describe_cluster()
        except (KafkaError, OSError):
            await self._close()
            return None
        value = described.get("cluster_id")
        return str(value) if value else None

    async def check(self) -> bool:
        """True if the broker is a new one and the consumers were rewound."""
        current = await self.cluster_id()
        if current is None:
            return False
        if self._seen is None or current == self._seen:
            self._seen = current
            return False
        log.warning(
            "the broker restarted with no memory (cluster id %s, was %s): rereading every "
            "partition from the start",
            current,
            self._seen,
        )
        self._seen = current
        await self.rewind()
        return True

    async def rewind(self) -> None:
        for subscriber in self._broker.subscribers:
            consumer = getattr(subscriber, "consumer", None)
            if consumer is None:
                continue
            assigned = consumer.assignment()
            if assigned:
                await consumer.seek_to_beginning(*assigned)

    async def _loop(self) -> None:
        while True:
            await self.check()
            await asyncio.sleep(self._every_s)

    async def _close(self) -> None:
        if self._admin is not None:
            with contextlib.suppress(KafkaError, OSError):
                await self._admin.close()
            self._admin = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._close()
