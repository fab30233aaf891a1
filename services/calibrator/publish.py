"""Putting thresholds on reag.thresholds.v1, keyed "<app>/tier<n>" for compaction.

Used by the calibrator at start (the embedded broker forgets everything on
restart, the store does not) and by ``reag calibrate --labels --publish``.
"""

from __future__ import annotations

from collections.abc import Sequence

from aiokafka import AIOKafkaProducer

from reag.judging.decision import threshold_key
from reag.v1 import events_pb2 as pb
from services.kit.client_options import client_options
from services.kit.delivery import CONTENT_TYPE, Emit
from services.kit.settings import KafkaSettings
from services.kit.topology import THRESHOLDS


def threshold_emits(thresholds: Sequence[pb.Threshold], topic: str = THRESHOLDS) -> list[Emit]:
    return [Emit(topic, t, threshold_key(t.app, t.tier)) for t in thresholds]


async def publish_thresholds(
    kafka: KafkaSettings, thresholds: Sequence[pb.Threshold], *, topic_suffix: str = ""
) -> int:
    """Publish with acks=all; returns how many were acknowledged."""
    producer = AIOKafkaProducer(acks="all", **client_options(kafka))
    await producer.start()
    try:
        for emit in threshold_emits(thresholds, THRESHOLDS + topic_suffix):
            await producer.send_and_wait(
                emit.topic,
                emit.message.SerializeToString(),
                key=emit.key.encode(),
                headers=[("content-type", CONTENT_TYPE.encode()), ("x-reag-type", b"Threshold")],
            )
        return len(thresholds)
    finally:
        await producer.stop()
