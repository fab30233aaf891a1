"""The elicitor's one handler: ``pb.Traffic`` -> ``pb.Intention``, keyed by case id.

Logs carry the case id and how the persona was matched, never the profile or
the category (which would reveal a health condition).
"""

from __future__ import annotations

import logging

from faststream.kafka import KafkaRouter

from reag.elicitation.directory import PersonaDirectory
from reag.elicitation.intentions import intention_from_traffic
from reag.v1 import events_pb2 as pb
from services.elicitor.settings import ElicitorSettings
from services.kit.codec import BadEventError
from services.kit.consume import Emit, consume
from services.kit.topology import INTENTIONS, SERVICES, TRAFFIC, suffixed

log = logging.getLogger("reag.elicitor")


def build_router(settings: ElicitorSettings, personas: PersonaDirectory) -> KafkaRouter:
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
        app_known=personas.knows,
    )
    async def elicit(event: pb.Traffic) -> Emit:
        matcher = personas.matcher(event.meta.app)
        if matcher is None:
            raise BadEventError(
                "no_persona_categories",
                f"app {event.meta.app!r} has a corpus but no persona documents, so the user "
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
