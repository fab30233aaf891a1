"""The elicitor's one handler: ``pb.Traffic`` -> ``pb.Intention``, keyed by case id.

The elicitor is the first reag hop for traffic an app produces itself, so the
event is redacted under the app's policy before anything else happens to it
(a dead letter of a traffic event is redacted too), then the shadow controls
decide, before any LLM call, whether the case goes on (an ``ORIGIN_SYNTHETIC``
claimed on this open topic buys no exemption from sampling or rate limits);
what they shed is counted by reason. Logs carry the case id and how the persona was matched,
never the profile or the category (which would reveal a health condition).
"""

from __future__ import annotations

import asyncio
import logging

from faststream.kafka import KafkaRouter
from google.protobuf.message import DecodeError

from reag.elicitation.directory import PersonaDirectory
from reag.elicitation.intentions import intention_from_traffic
from reag.metrics import TRAFFIC_ADMITTED, TRAFFIC_SHED
from reag.traffic.ingress import origin_untrusted
from reag.traffic.policy import PolicyDirectory
from reag.traffic.redaction import redact_bytes
from reag.traffic.shadow import ShadowGate
from reag.v1 import events_pb2 as pb
from services.elicitor.settings import ElicitorSettings
from services.kit.codec import BadEventError, quoted_id
from services.kit.delivery import Emit, consume
from services.kit.topology import INTENTIONS, SERVICES, TRAFFIC, suffixed

log = logging.getLogger("reag.elicitor")


def redacted_traffic_bytes(
    policies: PolicyDirectory, data: bytes, max_bytes: int | None = None
) -> bytes:
    """A traffic event's bytes as a dead letter may keep them: redacted.

    Parseable bytes are redacted field by field under the app's policy and stay
    replayable; bytes that do not parse, or are over ``max_bytes`` (dead-lettered
    as oversized, never scanned whole), are scanned as text with the default
    recognisers, cut to the limit (they could not be replayed as they were anyway).
    """
    if max_bytes is not None and len(data) > max_bytes:
        return redact_bytes(data, max_bytes=max_bytes)
    event = pb.Traffic()
    try:
        event.ParseFromString(data)
    except DecodeError:
        return policies.redactor("").raw(data)
    redacted, counts = policies.redactor(event.meta.app).traffic(event, where="dead_letter")
    if not counts:
        return data  # nothing to hide: the original bytes, as every other dead letter
    return redacted.SerializeToString()


def build_router(
    settings: ElicitorSettings,
    personas: PersonaDirectory,
    policies: PolicyDirectory,
    gate: ShadowGate,
) -> KafkaRouter:
    """``personas`` answers both "is this app known" and "what are its categories"."""
    suffix = settings.topic_suffix
    spec = suffixed(SERVICES["elicitor"], suffix)
    router = KafkaRouter()

    @consume(
        router,
        spec,
        TRAFFIC + suffix,
        pb.Traffic,
        max_event_bytes=settings.kafka.max_event_bytes,
        delivery=settings.delivery,
        app_known=personas.knows,
        scrub=lambda data: redacted_traffic_bytes(policies, data, settings.kafka.max_event_bytes),
    )
    async def elicit(raw: pb.Traffic) -> Emit | None:
        # Policies and persona categories are read from the store when their cache has
        # expired: the whole step runs off the event loop.
        return await asyncio.to_thread(admit_and_map, raw)

    def admit_and_map(raw: pb.Traffic) -> Emit | None:
        event = policies.redact(raw, where="elicitor")
        app = event.meta.app
        # The topic is open to any producer: a claimed synthetic origin buys no exemption.
        reason = gate.admit(policies.policy(app).shadow, origin_untrusted(event))
        if reason is not None:
            TRAFFIC_SHED.labels(app, reason).inc()
            log.debug("case %s shed: %s", event.meta.case_id, reason)
            return None
        TRAFFIC_ADMITTED.labels(app).inc()
        matcher = personas.matcher(app)
        if matcher is None:
            raise BadEventError(
                "no_persona_categories",
                f"app {quoted_id(app)} has a corpus but no persona documents, so the user "
                "cannot be mapped to a persona; add them (kind: persona) with `reag corpus add`",
            )
        intention, match = intention_from_traffic(event, matcher)
        log.debug(
            "case %s: persona matched by %s, score %.2f",
            event.meta.case_id,
            match.method,
            match.score,
        )
        return Emit(INTENTIONS + suffix, intention, event.meta.case_id)

    return router
