"""A judge tier's handlers: decode a criterion or a threshold, call the ``JudgeTier``, emit.

What the tier decides (accept / escalate / abstain), which thresholds it
holds and which it refuses are ``reag.judging.tier``; this module only wires
it to the tier's topics.
"""

from __future__ import annotations

from faststream.kafka import KafkaRouter

from reag.judging.tier import JudgeTier
from reag.v1 import events_pb2 as pb
from services.judge.settings import JudgeSettings
from services.kit.delivery import Emit, consume
from services.kit.topology import (
    ABSTAINS,
    JUDGE_TIER,
    SERVICES,
    THRESHOLDS,
    VERDICTS,
    suffixed,
)


def build_router(settings: JudgeSettings, tier: JudgeTier) -> KafkaRouter:
    suffix = settings.topic_suffix
    spec = suffixed(SERVICES[settings.service], suffix)
    onward = (ABSTAINS if tier.last else JUDGE_TIER[tier.tier + 1]) + suffix
    router = KafkaRouter()

    @consume(
        router,
        spec,
        JUDGE_TIER[tier.tier] + suffix,
        pb.JudgeRequest,
        max_event_bytes=settings.kafka.max_event_bytes,
        delivery=settings.delivery,
        group_id=f"{spec.name}{suffix}",
    )
    async def judge_criterion(request: pb.JudgeRequest) -> list[Emit]:
        step = await tier.decide(request)
        key = request.meta.case_id
        emits = []
        if step.verdict is not None:
            emits.append(Emit(VERDICTS + suffix, step.verdict, key))
        if step.escalation is not None:
            emits.append(Emit(onward, step.escalation, key))
        if step.abstain is not None:  # the last tier's doubts, or a guard at any tier
            emits.append(Emit(ABSTAINS + suffix, step.abstain, key))
        return emits

    @consume(
        router,
        spec,
        THRESHOLDS + suffix,
        pb.Threshold,
        max_event_bytes=settings.kafka.max_event_bytes,
        delivery=settings.delivery,
        broadcast=True,
    )
    async def follow_threshold(threshold: pb.Threshold) -> None:
        tier.follow(threshold)

    return router
