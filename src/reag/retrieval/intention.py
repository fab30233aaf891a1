"""The intention I as text: what the ranking kernels score and the prompts quote.

REAG's intention is the query together with the persona and the situation
(3.1), so all three are part of I: a persona document should rank for who is
asking, a requirement for what is asked.
"""

from __future__ import annotations

from reag.v1 import events_pb2 as pb


def intention_text(intention: pb.Intention) -> str:
    """Persona, situation and query on separate lines, in the order a person would tell them."""
    lines: list[str] = []
    persona = intention.persona
    who = persona.category_name or persona.category_id
    if who and persona.description:
        lines.append(f"User: {who}. {persona.description.strip()}")
    elif who or persona.description:
        lines.append(f"User: {(who or persona.description).strip()}")
    if intention.situation.strip():
        lines.append(f"Situation: {intention.situation.strip()}")
    lines.append(f"Query: {intention.query.strip()}")
    return "\n".join(lines)


def make_intention(
    query: str,
    *,
    persona_id: str = "",
    persona_name: str = "",
    persona_description: str = "",
    situation: str = "",
    app: str = "",
    case_id: str = "",
) -> pb.Intention:
    """A ``pb.Intention`` from plain values (benchmarks, tests, the CLI)."""
    return pb.Intention(
        meta=pb.EventMeta(case_id=case_id, app=app, schema_version=pb.SCHEMA_VERSION_1),
        query=query,
        persona=pb.Persona(
            category_id=persona_id,
            category_name=persona_name,
            description=persona_description,
        ),
        situation=situation,
    )
