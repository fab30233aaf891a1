"""Loading the compacted thresholds topic whole before a judge takes its first request.

The broadcast subscriber (``handlers``) follows reag.thresholds.v1 while the
judge runs, but it starts together with the request subscriber, so a request
could be judged before the thresholds in force were read and be escalated
for nothing. Reading the topic to its end offsets first closes that gap.
"""

from __future__ import annotations

import asyncio
import logging

from aiokafka import AIOKafkaConsumer, TopicPartition

from reag.v1 import events_pb2 as pb
from services.kit.client_options import client_options
from services.kit.codec import BadEventError, decode_event
from services.kit.settings import KafkaSettings

log = logging.getLogger("reag.judge.thresholds")


async def read_thresholds(
    kafka: KafkaSettings, topic: str, *, timeout_s: float = 30.0
) -> list[pb.Threshold]:
    """Every threshold on ``topic`` up to its end offsets now, in offset order per partition.

    A missing topic reads as empty (nothing was ever calibrated); bad records
    are skipped here, since the broadcast subscriber dead-letters them anyway.
    """
    consumer = AIOKafkaConsumer(enable_auto_commit=False, group_id=None, **client_options(kafka))
    await consumer.start()
    try:
        if topic not in await consumer.topics():
            return []
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        if not partitions:
            return []
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        end = await consumer.end_offsets(partitions)
        out: list[pb.Threshold] = []
        async with asyncio.timeout(timeout_s):
            while [tp for tp in partitions if await consumer.position(tp) < end[tp]]:
                batch = await consumer.getmany(timeout_ms=500)
                for records in batch.values():
                    for record in records:
                        try:
                            out.append(
                                decode_event(
                                    record.value, pb.Threshold, max_bytes=kafka.max_event_bytes
                                )
                            )
                        except BadEventError as exc:
                            log.warning(
                                "skipped a bad threshold at %s[%d]@%d: %s",
                                record.topic,
                                record.partition,
                                record.offset,
                                exc.reason,
                            )
        return out
    finally:
        await consumer.stop()
