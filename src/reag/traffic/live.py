"""One live request/response as an app hands it over, and the ``Traffic`` event made from it.

The recorder (``reag.client``) and ``reag traffic send`` both turn what an app
saw into the same ``reag.v1.Traffic`` event, keyed and labelled the same way
the services key theirs, so a live case looks the same on ``reag.traffic.v1``
whichever way it came. Nothing here redacts: callers pass the event through
``reag.traffic.redaction.Redactor`` before it leaves the process.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from google.protobuf.timestamp_pb2 import Timestamp

from reag.ids import case_id_for
from reag.v1 import events_pb2 as pb

# The headers every reag producer puts on an event (services/kit/delivery/outputs.py does the same).
CONTENT_TYPE = "application/x-protobuf"
TRAFFIC_HEADERS: tuple[tuple[str, bytes], ...] = (
    ("content-type", CONTENT_TYPE.encode()),
    ("x-reag-type", b"Traffic"),
)
# W3C trace context headers; only these are carried (baggage may hold anything, PII included).
TRACE_HEADERS = ("traceparent", "tracestate")


class InvalidExchangeError(ValueError):
    """An exchange that would be dead-lettered downstream; the reason names fields, not values."""


@dataclass(frozen=True, slots=True)
class LiveExchange:
    """What the app saw: the query, its answer and who asked. Not yet an event, not redacted."""

    query: str
    response: str
    user_id: str = ""
    request_id: str = ""
    latency_s: float = 0.0
    attributes: Mapping[str, object] = field(default_factory=dict)
    persona_hint: str = ""
    description: str = ""
    target: str = ""
    created_at: float | None = None  # seconds since the epoch; None: when the event is built


def attribute_text(value: object) -> str | None:
    """A profile attribute as the string the proto map holds; None drops it.

    Numbers and booleans keep their JSON spelling (``true``, ``2.5``), structures
    become compact JSON, so a structured profile survives the string-only map.
    """
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return str(value)


def check_exchange(exchange: LiveExchange) -> None:
    """Refuse what the services would dead-letter (``services.kit.codec.REQUIRED_FIELDS``)."""
    for name in ("query", "response"):
        value = getattr(exchange, name)
        if not isinstance(value, str):
            raise InvalidExchangeError(f"{name} is a {type(value).__name__}, not text")
        if not value.strip():
            raise InvalidExchangeError(f"{name} is empty")
    for name in ("user_id", "request_id", "persona_hint", "description", "target"):
        if not isinstance(getattr(exchange, name), str):
            raise InvalidExchangeError(f"{name} is a {type(getattr(exchange, name)).__name__}")
    latency = exchange.latency_s
    if (
        isinstance(latency, bool)
        or not isinstance(latency, int | float)
        or not math.isfinite(latency)
        or latency < 0
    ):
        raise InvalidExchangeError("latency_s is not a non-negative number")


def to_traffic(exchange: LiveExchange, app: str) -> pb.Traffic:
    """The ``ORIGIN_LIVE`` event for ``exchange``; ``InvalidExchangeError`` if it lacks content.

    A request without an id gets a random one here, and the case id is derived
    from (app, request id) as ``reag.ids`` derives every case id, so a
    redelivered event keeps its case.
    """
    check_exchange(exchange)
    request_id = exchange.request_id or uuid.uuid4().hex
    event = pb.Traffic(
        request_id=request_id,
        query=exchange.query,
        actual_response=exchange.response,
        response_latency_s=float(exchange.latency_s),
        target=exchange.target,
    )
    profile = event.profile
    profile.user_id = exchange.user_id
    profile.persona_hint = exchange.persona_hint
    profile.description = exchange.description
    for name, value in exchange.attributes.items():
        text = attribute_text(value)
        if text is not None:
            profile.attributes[str(name)] = text
    meta = event.meta
    meta.case_id = case_id_for(app, request_id)
    meta.app = app
    meta.schema_version = pb.SCHEMA_VERSION_1
    meta.origin = pb.ORIGIN_LIVE
    created = Timestamp()
    created.FromNanoseconds(
        int((exchange.created_at if exchange.created_at is not None else time.time()) * 1e9)
    )
    meta.created_at.CopyFrom(created)
    return event


def kafka_key(event: pb.Traffic) -> bytes:
    """Events are keyed by case id, as every service keys its outputs (downstream dedup)."""
    return event.meta.case_id.encode()
