"""The one way a reag service consumes a topic: decode, guard, handle, emit, commit.

Delivery rules (docs/pipeline.md and docs/architecture.md, "Delivery"):
- at-least-once: the offset is committed only after every output has been
  acknowledged by the cluster (acks=all); if publishing fails the event is
  not committed and comes back (``AckPolicy.NACK_ON_ERROR`` seeks back);
- nothing is dropped silently: an input that can never be processed (bad
  bytes, missing fields, oversized, unknown app or schema version, LLM output
  still invalid after repair, retries exhausted, a bug) becomes a dead letter
  on ``reag.dlq.v1`` with the original bytes and a reason, and is committed;
- outputs are keyed by the case id, so a redelivered input produces outputs
  that downstream consumers recognise as duplicates.

Handlers are plain typed functions ``async def f(event: In) -> Emit | list[Emit] | None``
that never see Kafka; the topology they may publish to is ``topology.SERVICES``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from faststream import AckPolicy
from faststream.kafka import KafkaMessage, KafkaRouter
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from reag import metrics
from reag.llm.accounting import charged_to
from reag.llm.base import (
    BudgetExceededError,
    LLMError,
    StructuredOutputError,
    TransientLLMError,
)
from reag.v1 import events_pb2 as pb
from services.kit.codec import BadEventError, check_declared_type, decode_event, quoted_id
from services.kit.topology import DLQ, ServiceSpec

log = logging.getLogger("reag.consume")

M = TypeVar("M", bound=Message)
CONTENT_TYPE = "application/x-protobuf"
# A dead letter's x-reag-llm-output header keeps only the start of the model's output:
# enough to see how it went wrong, not a copy of text derived from a user's query and
# profile (docs/operations.md, "What dead letters and logs keep").
LLM_OUTPUT_EXCERPT_CHARS = 200


@dataclass(frozen=True, slots=True)
class Emit:
    """One output event: where it goes, what it is, how it is keyed."""

    topic: str
    message: Message
    key: str


Handler = Callable[[M], Awaitable["Emit | Sequence[Emit] | None"]]
AppCheck = Callable[[str], bool]
# Turns an input's bytes into what its dead letter may keep (PII redacted) for the first
# hop of raw traffic; every later topic holds redacted events only.
Scrub = Callable[[bytes], bytes]
# Turns an input's bytes into the handler's event where the topic's payload is not a reag
# event (OTLP spans); raises BadEventError for bytes that can never be processed.
Decode = Callable[[bytes | None], M]


class UndeclaredTopicError(RuntimeError):
    """A handler tried to publish somewhere its ServiceSpec does not declare."""


def _outputs(result: Emit | Sequence[Emit] | None) -> list[Emit]:
    if result is None:
        return []
    if isinstance(result, Emit):
        return [result]
    return list(result)


def _classify(exc: BaseException) -> tuple[str, str, dict[str, str]]:
    """Map a handler failure to (error_type, reason, extra headers) for the dead letter."""
    if isinstance(exc, BadEventError):
        return exc.error_type, exc.reason, {}
    if isinstance(exc, StructuredOutputError):
        excerpt = exc.raw[:LLM_OUTPUT_EXCERPT_CHARS]
        return "llm_output_invalid", str(exc), {"x-reag-llm-output": excerpt}
    if isinstance(exc, BudgetExceededError):
        return "budget_exceeded", str(exc), {}
    if isinstance(exc, TransientLLMError):
        return "retries_exhausted", f"{type(exc).__name__}: {exc}", {}
    if isinstance(exc, LLMError):
        return "llm_error", f"{type(exc).__name__}: {exc}", {}
    return "processing_error", f"{type(exc).__name__}: {exc}", {}


def _observe_lag(msg: KafkaMessage, service: str) -> None:
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
        from aiokafka import TopicPartition

        end = highwater(TopicPartition(record.topic, record.partition))
    except (AssertionError, TypeError, ValueError):
        return
    if end is not None:
        metrics.CONSUMER_LAG.labels(service, record.topic, str(record.partition)).set(
            max(0, int(end) - int(record.offset) - 1)
        )


def consume(
    router: KafkaRouter,
    spec: ServiceSpec,
    topic: str,
    event_type: type[M],
    *,
    max_event_bytes: int,
    app_known: AppCheck | None = None,
    scrub: Scrub | None = None,
    decode: Decode[M] | None = None,
    group_id: str | None = None,
    broadcast: bool = False,
    auto_offset_reset: Literal["latest", "earliest", "none"] = "earliest",
    max_poll_interval_ms: int = 1_800_000,
) -> Callable[[Handler[M]], Handler[M]]:
    """Register ``handler`` as ``spec``'s consumer of ``topic`` on ``router``.

    By default the service's instances share the topic as one consumer group,
    ``<service>-<topic>``: one group per topic, not per service, because a
    group whose members read different topics rebalances every member on each
    join (measured on Tansu: two topics in one group took 14 s to start, one
    group per topic ~3 s each, concurrently). ``broadcast=True`` makes every
    instance read every partition from the beginning without a group, which is
    how judges load the compacted thresholds topic at start and follow it.

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
    """
    if topic not in spec.consumes:
        raise UndeclaredTopicError(f"{spec.name} does not declare that it consumes {topic}")
    publishers = {name: router.publisher(name) for name in (*spec.produces, DLQ)}

    def decorator(handler: Handler[M]) -> Handler[M]:
        async def dead_letter(
            record: Any, error_type: str, reason: str, extra: dict[str, str]
        ) -> None:
            value = record.value or b""
            if scrub is not None:
                value = await asyncio.to_thread(scrub, value)
                extra = {k: v for k, v in extra.items() if k != "x-reag-llm-output"}
            letter = pb.DeadLetter(
                service=spec.name,
                topic=record.topic,
                partition=record.partition,
                offset=record.offset,
                key=record.key or b"",
                value=value,
                headers={k: v.decode("utf-8", "replace") for k, v in (record.headers or ())},
                reason=reason,
                error_type=error_type,
            )
            letter.failed_at.CopyFrom(Timestamp())
            letter.failed_at.GetCurrentTime()
            await publishers[DLQ].publish(
                letter.SerializeToString(),
                key=record.key or None,
                headers={"content-type": CONTENT_TYPE, "x-reag-type": "DeadLetter", **extra},
            )
            metrics.DEAD_LETTERS.labels(spec.name, record.topic, error_type).inc()
            log.warning(
                "dead-lettered %s[%d]@%d: %s (%s)",
                record.topic,
                record.partition,
                record.offset,
                error_type,
                reason,
            )

        async def on_message(msg: KafkaMessage) -> None:
            record: Any = msg.raw_message
            metrics.EVENTS_CONSUMED.labels(spec.name, topic).inc()
            try:
                await process(record)
            finally:
                _observe_lag(msg, spec.name)

        async def process(record: Any) -> None:
            started = time.perf_counter()
            try:
                check_declared_type(record.headers, event_type.__name__)
                if decode is not None:
                    event = decode(record.value)
                else:
                    event = decode_event(record.value, event_type, max_bytes=max_event_bytes)
                app = getattr(getattr(event, "meta", None), "app", "")
                # The check may read the store (a cache miss): off the event loop.
                if app_known is not None and not await asyncio.to_thread(app_known, app):
                    raise BadEventError(
                        "unknown_app",
                        f"app {quoted_id(app)} has no corpus here; add one with "
                        "`reag corpus add PATH... --app APP`",
                    )
                with charged_to(app):
                    outputs = _outputs(await handler(event))
            except Exception as exc:  # every failure becomes a dead letter
                error_type, reason, extra = _classify(exc)
                if error_type == "processing_error":
                    log.exception(
                        "%s failed on %s[%d]@%d",
                        spec.name,
                        record.topic,
                        record.partition,
                        record.offset,
                    )
                await dead_letter(record, error_type, reason, extra)
                return
            undeclared = [e.topic for e in outputs if not spec.may_publish(e.topic)]
            if undeclared:
                await dead_letter(
                    record,
                    "processing_error",
                    f"{spec.name} tried to publish to undeclared topic(s) {undeclared}; "
                    "declare them in services/kit/topology.py",
                    {},
                )
                return
            for emit in outputs:
                await publishers[emit.topic].publish(
                    emit.message.SerializeToString(),
                    key=emit.key.encode(),
                    headers={
                        "content-type": CONTENT_TYPE,
                        "x-reag-type": type(emit.message).__name__,
                    },
                )
                metrics.EVENTS_PUBLISHED.labels(spec.name, emit.topic).inc()
            metrics.STAGE_LATENCY.labels(spec.name).observe(time.perf_counter() - started)

        on_message.__name__ = f"{spec.name}_{handler.__name__}"
        router.subscriber(
            topic,
            group_id=None if broadcast else (group_id or f"{spec.name}-{topic}"),
            auto_offset_reset=auto_offset_reset,
            max_poll_interval_ms=max_poll_interval_ms,
            ack_policy=AckPolicy.MANUAL if broadcast else AckPolicy.NACK_ON_ERROR,
            title=f"{spec.name}:{topic}",
        )(on_message)
        return handler

    return decorator
