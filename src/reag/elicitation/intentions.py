"""From one request of the app under test to a user intention: query + persona + situation.

Live and synthetic traffic take this one path; a synthetic case differs only
in carrying the simulated user's situation (and a persona hint that names its
category, so it maps with score 1).
"""

from __future__ import annotations

from reag.elicitation.personas import PersonaMatch, PersonaMatcher, persona_description
from reag.v1 import events_pb2 as pb


def intention_from_traffic(
    traffic: pb.Traffic, matcher: PersonaMatcher
) -> tuple[pb.Intention, PersonaMatch]:
    """The intention, keyed like the traffic (same meta), and how its persona was chosen."""
    match = matcher.match(traffic.profile)
    intention = pb.Intention(
        query=traffic.query,
        persona=match.category.to_proto(
            description=persona_description(match.category, traffic.profile),
            score=round(match.score, 4),
        ),
        situation=traffic.situation,
        actual_response=traffic.actual_response,
        request_id=traffic.request_id,
    )
    intention.meta.CopyFrom(traffic.meta)
    return intention, match
