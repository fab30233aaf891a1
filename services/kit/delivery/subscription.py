"""Registering a handler as a service's consumer of a topic: the group, the rebalance
listener, the lag gauge, and the wiring of runner and offsets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar

from aiokafka import ConsumerRebalanceListener, TopicPartition
from faststream import AckPolicy
from faststream.kafka import KafkaMessage, KafkaRouter
from google.protobuf.message import Message

from reag import metrics
from services.kit.delivery.offsets import Delivery
from services.kit.delivery.outputs import Handler
from services.kit.delivery.runner import AppCheck, Decode, Runner, Scrub
from services.kit.faults import UndeclaredTopicError
from services.kit.settings import DeliverySettings
from services.kit.topology import DLQ, ServiceSpec

M = TypeVar("M", bound=Message)


def observe_lag(msg: KafkaMessage, service: str) -> None:
    """Messages still behind this one on its partition, from the consumer's last fetch.

    Reading the high watermark the consumer already holds costs no request; it
    is exact when messages flow and stale only while the service is idle
    (when lag is zero anyway) or stuck (which liveness probes catch).
    """
    record: Any = msg.raw_message
    consumer = getattr(msg, "consumer", None)
    highwater = getattr(consumer, "highwater", None)
    if highwater is None:
        return
    try:
        end = highwater(TopicPartition(record.topic, record.partition))
    except (AssertionError, TypeError, ValueError):
        return
    if end is not None:
        metrics.CONSUMER_LAG.labels(service, record.topic, str(record.partition)).set(
            max(0, int(end) - int(record.offset) - 1)
        )


class RebalanceListener(ConsumerRebalanceListener):  # type: ignore[misc]
    """Tells delivery which partitions went to another instance, so it forgets them."""

    def __init__(self, delivery: Delivery) -> None:
        self._delivery = delivery

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self._delivery.revoked(set(revoked))

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        return None


def consume(
    router: KafkaRouter,
    spec: ServiceSpec,
    topic: str,
    event_type: type[M],
    *,
    max_event_bytes: int,
    app_known: AppCheck | None = None,
    scrub: Scrub | None = None,
    decode: Decode | None = None,
    group_id: str | None = None,
    broadcast: bool = False,
    auto_offset_reset: Literal["latest", "earliest", "none"] = "earliest",
    max_poll_interval_ms: int = 1_800_000,
    delivery: DeliverySettings | None = None,
    registry: dict[str, Delivery] | None = None,
    in_key_order: bool = True,
) -> Callable[[Handler[M]], Handler[M]]:
    """Register ``handler`` as ``spec``'s consumer of ``topic`` on ``router``.

    By default the service's instances share the topic as one consumer group,
    ``<service>-<topic>``: one group per topic, not per service, because a
    group whose members read different topics rebalances every member on each
    join (measured on Tansu: two topics in one group took 14 s to start, one
    group per topic ~3 s each, concurrently). ``broadcast=True`` makes every
    instance read every partition from the beginning without a group, which is
    how judges load the compacted thresholds topic at start and follow it.

    ``app_known``: an event of an app it denies is parked (``delivery.park_s``), then
    dead-lettered as ``app_not_loaded``; handlers raise ``AppNotLoadedError`` likewise.

    ``scrub``, on a first hop of raw traffic, redacts the bytes a dead letter keeps.

    ``decode`` replaces the protobuf decoding and validation of ``event_type`` for a
    topic whose payload reag does not own (the elicitor's OTLP spans); delivery, dead
    letters and commits stay the same. Such an event has no ``meta``, so ``app_known``
    does not apply and the handler checks apps itself.

    The LLM calls a handler makes are charged to the event's app, for the shadow
    controls' spend budgets (reag.traffic.spend).

    ``max_poll_interval_ms`` is 30 minutes, not aiokafka's 5: one event can
    hold several local-model calls, and a consumer that exceeds the interval
    loses its partitions and the event is delivered again.

    ``in_key_order``: events with the same key run one after another (the default);
    False lets them run at once, for a handler whose events of one key are independent
    (the judges' requests of one case's criteria).

    ``registry``, when given, receives the subscriber's ``Delivery`` under the topic's
    name, for tests that watch the park and the paused partitions.
    """
    if topic not in spec.consumes:
        raise UndeclaredTopicError(f"{spec.name} does not declare that it consumes {topic}")
    publishers = {name: router.publisher(name) for name in (*spec.produces, DLQ)}
    settings = delivery or DeliverySettings()

    def decorator(handler: Handler[M]) -> Handler[M]:
        runner = Runner(
            spec,
            event_type,
            handler,
            publishers,
            max_event_bytes,
            app_known,
            scrub,
            decode,
            settings.dead_letter_max_bytes,
        )
        flow = Delivery(
            spec.name,
            topic,
            settings,
            runner.attempt,
            runner.give_up,
            commits=not broadcast,
            in_key_order=in_key_order,
        )
        if registry is not None:
            registry[topic] = flow

        async def on_message(msg: KafkaMessage) -> None:
            metrics.EVENTS_CONSUMED.labels(spec.name, topic).inc()
            try:
                await flow.handle(msg.raw_message, msg.consumer)
            finally:
                observe_lag(msg, spec.name)

        on_message.__name__ = f"{spec.name}_{handler.__name__}"
        extra: dict[str, Any] = {} if broadcast else {"listener": RebalanceListener(flow)}
        router.subscriber(
            topic,
            group_id=None if broadcast else (group_id or f"{spec.name}-{topic}"),
            auto_offset_reset=auto_offset_reset,
            max_poll_interval_ms=max_poll_interval_ms,
            ack_policy=AckPolicy.MANUAL,
            title=f"{spec.name}:{topic}",
            **extra,
        )(on_message)
        return handler

    return decorator
