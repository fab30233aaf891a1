"""The ledger's wiring of ``reag.traffic.ingress``: its broker produces, its topology decides.

The logic of the gRPC ``TrafficService`` lives in the core
(``reag.traffic.ingress.TrafficIngress``); the ledger serves it beside the
results API on its gRPC port (docs/architecture.md says why), producing with
its own broker to the traffic topic it declares.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from faststream.kafka import KafkaBroker

from reag.traffic.ingress import AppCheck, Produce, RedactorFor, TrafficIngress
from reag.traffic.redaction import DEFAULT_MAX_EVENT_BYTES
from services.kit.topology import SERVICES, TRAFFIC, suffixed

CONTENT_TYPE = "application/x-protobuf"


def broker_producer(broker: KafkaBroker) -> Produce:
    """Produces with the ledger's own broker: acks=all, tracing and metrics middlewares."""

    async def produce(topic: str, value: bytes, key: bytes) -> None:
        # no_confirm=False (the default): publish returns once the broker has acknowledged.
        await broker.publish(
            value,
            topic,
            key=key,
            headers={"content-type": CONTENT_TYPE, "x-reag-type": "Traffic"},
        )

    return produce


def traffic_ingress(
    *,
    produce: Produce,
    redactor_for: RedactorFor,
    app_known: AppCheck,
    topic_suffix: str = "",
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    clock: Callable[[], float] = time.time,
) -> TrafficIngress:
    """The ingress producing to the ledger's declared traffic topic."""
    topic = TRAFFIC + topic_suffix
    if not suffixed(SERVICES["ledger"], topic_suffix).may_publish(topic):
        raise ValueError(
            f"the ledger does not declare {topic} as an output; see services/kit/topology.py"
        )
    return TrafficIngress(
        produce=produce,
        redactor_for=redactor_for,
        app_known=app_known,
        topic=topic,
        max_event_bytes=max_event_bytes,
        service="ledger",
        clock=clock,
    )
