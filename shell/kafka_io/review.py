"""Kafka for ``reag review``: abstains in (its own consumer group), reviews out.

The review tool is interactive, so it pulls one record at a time instead of
registering a handler, and commits by hand only after the reviewer's label
has been acknowledged on ``reag.reviews.v1`` (the loop in
``reag.review.session`` decides when). Built on the kit's broker, so it gets
the same security settings, tracing and metrics as the services.
"""

from __future__ import annotations

import logging
from types import TracebackType
from typing import Any

from faststream import AckPolicy
from faststream.kafka.message import KafkaMessage

from reag.review.session import SourceItem
from reag.v1 import events_pb2 as pb
from services.kit.broker import make_broker
from services.kit.delivery import CONTENT_TYPE
from services.kit.settings import ServiceSettings
from services.kit.topology import ABSTAINS, REVIEWS

DEFAULT_GROUP = "reag-review"


class ReviewBrokerError(RuntimeError):
    """The broker could not be reached or refused the review tool."""


class KafkaReviewIO:
    """An ``AbstainSource`` and a ``ReviewSink``; use as ``async with``."""

    def __init__(self, settings: ServiceSettings, *, group: str = DEFAULT_GROUP) -> None:
        suffix = settings.topic_suffix
        self._abstains, self._reviews = ABSTAINS + suffix, REVIEWS + suffix
        self._bootstrap = settings.kafka.bootstrap_servers
        self._broker = make_broker(settings.kafka, "review")
        self._subscriber = self._broker.subscriber(
            self._abstains,
            group_id=group,
            auto_offset_reset="earliest",
            ack_policy=AckPolicy.MANUAL,
            persistent=False,
        )

    async def __aenter__(self) -> KafkaReviewIO:
        # FastStream logs every connection at INFO; the reviewer's terminal is for cases.
        logging.getLogger("faststream").setLevel(logging.WARNING)
        try:
            await self._broker.start()
        except Exception as exc:  # aiokafka's connection errors have no common stubbed base
            await self._broker.stop()
            raise ReviewBrokerError(
                f"cannot reach Kafka at {self._bootstrap} ({type(exc).__name__}: {exc}); "
                "start the stack with `reag up` or set REAG_KAFKA__BOOTSTRAP_SERVERS"
            ) from exc
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._broker.stop()

    async def next(self, timeout_s: float) -> SourceItem | None:
        message = await self._subscriber.get_one(timeout=timeout_s)
        if message is None:
            return None
        record: Any = message.raw_message  # one ConsumerRecord: get_one never batches
        where = f"{record.topic}[{record.partition}]@{record.offset}"
        return SourceItem(value=record.value or b"", where=where, handle=message)

    async def commit(self, item: SourceItem) -> None:
        if not isinstance(item.handle, KafkaMessage):
            raise TypeError(f"{item.where} did not come from this source")
        await item.handle.ack()

    async def publish(self, review: pb.Review) -> None:
        await self._broker.publish(
            review.SerializeToString(),
            self._reviews,
            key=review.meta.case_id.encode(),
            headers={"content-type": CONTENT_TYPE, "x-reag-type": "Review"},
        )
