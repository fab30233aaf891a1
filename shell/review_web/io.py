"""Kafka around the shared queue: abstains in, resolved labels out, for both front ends.

``ingest`` moves records from ``reag.abstains.v1`` into the store's queue and
commits each offset only after its row is written, so a crash re-reads (and
the queue's unique key drops the repeat). ``republish`` re-sends resolved items
whose Review was not acknowledged. ``StoreReviewIO`` gives ``reag review`` in a
terminal the same queue through the ``AbstainSource``/``ReviewSink`` its loop
already takes: the terminal and the web pages lease from one table, so an item
one holds is not offered by the other, and both publish through
``KafkaReviewIO.publish`` (one Review per resolved item).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import timedelta
from types import TracebackType

from sqlalchemy.orm import Session, sessionmaker

from reag.calibration.store import CalibrationStore
from reag.recalibration.day_one import has_own_threshold
from reag.review.policy import Vote
from reag.review.queue import ReviewQueue
from reag.review.session import SourceItem, decode_abstain
from reag.storage import open_store
from reag.v1 import events_pb2 as pb
from shell.kafka_io.review import KafkaReviewIO

log = logging.getLogger(__name__)


def threshold_lookup(sessions: sessionmaker[Session]) -> Callable[[str], bool]:
    """Whether an app has a threshold of its own, from the calibration store (a borrowed one
    counts only once the app's audits certified it)."""
    store = CalibrationStore(sessions)
    return lambda app: has_own_threshold(store, app)


def open_queue(dsn: str, *, per_item: int = 1, lease_s: float = 900.0) -> ReviewQueue:
    sessions = open_store(dsn)
    return ReviewQueue(
        sessions,
        per_item=per_item,
        lease=timedelta(seconds=lease_s),
        has_threshold=threshold_lookup(sessions),
    )


async def ingest_once(kafka: KafkaReviewIO, queue: ReviewQueue, timeout_s: float) -> bool:
    """Move one record into the queue; False when none arrived within ``timeout_s``."""
    item = await kafka.next(timeout_s)
    if item is None:
        return False
    abstain = decode_abstain(item.value)
    if abstain is None:
        log.warning("review queue: %s is not a readable Abstain event; skipped", item.where)
    else:
        await asyncio.to_thread(queue.add, abstain)
    await kafka.commit(item)
    return True


async def ingest(kafka: KafkaReviewIO, queue: ReviewQueue, poll_s: float = 1.0) -> None:
    """Forever: abstains into the queue (run as a task; cancel to stop)."""
    while True:
        await ingest_once(kafka, queue, poll_s)


async def republish(kafka: KafkaReviewIO, queue: ReviewQueue, every_s: float = 5.0) -> None:
    """Forever: re-send resolved items whose Review was not acknowledged."""
    while True:
        for key, review in await asyncio.to_thread(queue.unpublished):
            try:
                await kafka.publish(review)
            except Exception:  # a broker fault: try again next round
                log.warning("review of item %d still not published", key, exc_info=True)
                break
            await asyncio.to_thread(queue.mark_published, key)
        await asyncio.sleep(every_s)


class StoreReviewIO:
    """``reag review``'s source and sink over the shared queue; use as ``async with``.

    ``next`` first drains what Kafka has into the queue, then leases the next item
    for this reviewer. An item handed out and not labelled by the next call was
    skipped: its lease is given back and this session does not offer it again.
    """

    def __init__(self, kafka: KafkaReviewIO, queue: ReviewQueue, reviewer: str) -> None:
        self._kafka, self._queue, self._reviewer = kafka, queue, reviewer
        self._pending: int | None = None
        self._skipped: set[int] = set()

    async def __aenter__(self) -> StoreReviewIO:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._give_back()

    def _give_back(self) -> None:
        if self._pending is not None:
            self._queue.release(self._pending, self._reviewer)
            self._skipped.add(self._pending)
            self._pending = None

    async def next(self, timeout_s: float) -> SourceItem | None:
        self._give_back()
        while await ingest_once(self._kafka, self._queue, 0.05):
            pass
        item = await asyncio.to_thread(self._queue.take, self._reviewer, exclude=self._skipped)
        if item is None:
            await asyncio.sleep(timeout_s)
            return None
        self._pending = item.key
        return SourceItem(
            value=item.abstain.SerializeToString(), where=f"queue item {item.key}", handle=item.key
        )

    async def commit(self, item: SourceItem) -> None:
        if item.handle == self._pending:
            self._pending = None

    async def publish(self, review: pb.Review) -> None:
        """Record the terminal's label; publish the item's Review when it resolves."""
        key = self._pending
        if key is None:
            raise RuntimeError("a label for no item handed out")
        vote: Vote = "YES" if review.label == pb.LABEL_YES else "NO"
        outcome = await asyncio.to_thread(
            self._queue.record, key, self._reviewer, vote, review.comment
        )
        if outcome.review is not None:
            await self._kafka.publish(outcome.review)
            await asyncio.to_thread(self._queue.mark_published, key)
