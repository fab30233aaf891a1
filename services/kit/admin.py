"""Creating reag's topics on any Kafka: partitioned, the thresholds topic compacted, and
the topics raw traffic lands on kept only for ``KafkaSettings.ingress_retention_ms``."""

from __future__ import annotations

import contextlib

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from services.kit.client_options import client_options
from services.kit.settings import KafkaSettings
from services.kit.topology import TOPICS, TopicSpec


def _admin(kafka: KafkaSettings) -> AIOKafkaAdminClient:
    return AIOKafkaAdminClient(**client_options(kafka))


def topic_configs(spec: TopicSpec, kafka: KafkaSettings) -> dict[str, str]:
    """The configs a topic is created with. Only on creation: an existing topic keeps its own
    (change it with ``kafka-configs --alter``)."""
    configs: dict[str, str] = {}
    if spec.compacted:
        configs["cleanup.policy"] = "compact"
    if spec.ingress:
        configs["retention.ms"] = str(kafka.ingress_retention_ms)
    return configs


async def ensure_topics(kafka: KafkaSettings, suffix: str = "") -> list[str]:
    """Create every missing reag topic; returns the names created.

    ``suffix`` isolates tests that share one broker.
    """
    admin = _admin(kafka)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        wanted = [
            NewTopic(
                spec.name + suffix,
                num_partitions=kafka.partitions,
                replication_factor=kafka.replication_factor,
                topic_configs=topic_configs(spec, kafka),
            )
            for spec in TOPICS
            if spec.name + suffix not in existing
        ]
        if wanted:
            # Another process may create them between list and create.
            with contextlib.suppress(TopicAlreadyExistsError):
                await admin.create_topics(wanted)
        return [t.name for t in wanted]
    finally:
        await admin.close()
