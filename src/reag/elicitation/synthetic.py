"""Synthetic mode: simulated users probe the app under test and become ordinary traffic.

Each case: draw a category and its few-shot examples, let the agent write the
user, send the user's query and profile to the app through its target
adapter, and wrap request and reply as a ``pb.Traffic`` with origin
SYNTHETIC. From there synthetic and live cases take the same path through
the pipeline.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from google.protobuf.timestamp_pb2 import Timestamp

from reag.apps import AppConfig, SeedQuery
from reag.elicitation.personas import PersonaCategory
from reag.elicitation.simulated_user import (
    USER_MAX_TOKENS,
    FewShotSampler,
    SimulatedUser,
    SimulatedUserAgent,
)
from reag.elicitation.targets import Target, TargetError, TargetReply, TargetRequest
from reag.ids import case_id_for
from reag.llm.base import StructuredOutputError
from reag.llm.client import LLMClient
from reag.v1 import events_pb2 as pb


@dataclass(frozen=True, slots=True)
class SyntheticCase:
    """One probe: the traffic event, and the simulated user behind it (for reporting)."""

    traffic: pb.Traffic
    user: SimulatedUser


@dataclass(frozen=True, slots=True)
class FailedProbe:
    """A probe that made no traffic (the agent could not write the user, or the app did
    not answer); reported, never published."""

    index: int
    category: PersonaCategory
    error: str


def app_summary(app: AppConfig) -> str:
    title = app.title or app.name
    return f"{title}. {app.description}".strip() if app.description else title


def new_run_id() -> str:
    return f"run-{uuid.uuid4().hex[:12]}"


def build_traffic(
    app: str, run_id: str, index: int, user: SimulatedUser, reply: TargetReply
) -> pb.Traffic:
    """Deterministic ids from (app, run, index): a re-published case keeps its case id."""
    request_id = f"{run_id}-{index:04d}"
    traffic = pb.Traffic(
        request_id=request_id,
        query=user.grounding.full_text(user.draft.query),
        profile=pb.UserProfile(
            user_id=f"sim-{request_id}",
            persona_hint=user.category.id,
            description=user.draft.profile,
            attributes={"simulated": "true", "grounding_query": user.grounding.id},
        ),
        actual_response=reply.text,
        situation=user.draft.situation,
        response_latency_s=reply.latency_s,
        target=reply.endpoint,
    )
    meta = traffic.meta
    meta.case_id = case_id_for(app, request_id)
    meta.app = app
    meta.schema_version = pb.SCHEMA_VERSION_1
    meta.origin = pb.ORIGIN_SYNTHETIC
    meta.run_id = run_id
    created = Timestamp()
    created.GetCurrentTime()
    meta.created_at.CopyFrom(created)
    return traffic


async def simulate(
    app: AppConfig,
    categories: Sequence[PersonaCategory],
    seeds: Sequence[SeedQuery],
    client: LLMClient,
    target: Target,
    *,
    count: int,
    seed: int | None = None,
    run_id: str | None = None,
    max_tokens: int = USER_MAX_TOKENS,
    paraphrase: bool = False,
) -> AsyncIterator[SyntheticCase | FailedProbe]:
    """Yields each case as soon as the app has answered it; a failed probe is yielded too.

    ``seed`` fixes the sampling of categories and examples, and is passed to the
    model (offset per case) where the provider honours seeds.
    """
    rng = random.Random(seed)
    sampler = FewShotSampler(categories, seeds, rng)
    agent = SimulatedUserAgent(
        client, app_summary(app), max_tokens=max_tokens, paraphrase=paraphrase
    )
    run = run_id or new_run_id()
    for index in range(count):
        shot = sampler.draw()
        try:
            user = await agent.write(shot, seed=None if seed is None else seed + index)
        except StructuredOutputError as exc:
            # The agent's own output was unusable even after its repair attempt: this user
            # is reported as a failed probe, and the run goes on with the next one.
            yield FailedProbe(index, shot.category, f"simulated user not written: {exc}")
            continue
        request = TargetRequest(
            query=user.draft.query,
            profile=pb.UserProfile(
                user_id=f"sim-{run}-{index:04d}",
                persona_hint=user.category.id,
                description=user.draft.profile,
            ),
            context=user.grounding.context,
            context_title=user.grounding.context_title,
        )
        try:
            reply = await target.ask(request)
        except TargetError as exc:
            yield FailedProbe(index, user.category, str(exc))
            continue
        yield SyntheticCase(
            build_traffic(app.name, run, index, user, reply),
            user,
        )
