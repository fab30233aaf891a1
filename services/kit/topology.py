"""The service graph, written down once: topics, who consumes and who produces them.

The embedded stack creates topics from ``TOPICS``; the Helm chart, the
dashboards and the system tests are checked against ``SERVICES``; the
``consume`` decorator refuses to publish to a topic a service does not declare.
"""

from __future__ import annotations

from dataclasses import dataclass

TRAFFIC = "reag.traffic.v1"
INTENTIONS = "reag.intentions.v1"
INTERPRETATIONS = "reag.interpretations.v1"
ORACLES = "reag.oracles.v1"
JUDGE_TIER = {1: "reag.judge.tier1.v1", 2: "reag.judge.tier2.v1", 3: "reag.judge.tier3.v1"}
VERDICTS = "reag.verdicts.v1"
ABSTAINS = "reag.abstains.v1"
REVIEWS = "reag.reviews.v1"
THRESHOLDS = "reag.thresholds.v1"
RESULTS = "reag.results.v1"
DLQ = "reag.dlq.v1"

N_TIERS = len(JUDGE_TIER)


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    payload: str  # the protobuf message type in proto/reag/v1/events.proto
    compacted: bool = False


TOPICS: tuple[TopicSpec, ...] = (
    TopicSpec(TRAFFIC, "Traffic"),
    TopicSpec(INTENTIONS, "Intention"),
    TopicSpec(INTERPRETATIONS, "Interpretation"),
    TopicSpec(ORACLES, "Oracle"),
    *(TopicSpec(name, "JudgeRequest") for name in JUDGE_TIER.values()),
    TopicSpec(VERDICTS, "Verdict"),
    TopicSpec(ABSTAINS, "Abstain"),
    TopicSpec(REVIEWS, "Review"),
    TopicSpec(THRESHOLDS, "Threshold", compacted=True),
    TopicSpec(RESULTS, "Result"),
    TopicSpec(DLQ, "DeadLetter"),
)


@dataclass(frozen=True, slots=True)
class ServiceSpec:
    name: str
    consumes: tuple[str, ...]
    produces: tuple[str, ...]  # besides the DLQ, which every service may write

    def may_publish(self, topic: str) -> bool:
        return topic == DLQ or topic in self.produces


def suffixed(spec: ServiceSpec, suffix: str) -> ServiceSpec:
    """The same service on topics named ``<topic><suffix>`` (the DLQ keeps its name).

    Lets tests (and parallel test runs) share one broker without seeing each
    other's events; ``ServiceSettings.topic_suffix`` is empty in production.
    """
    if not suffix:
        return spec
    return ServiceSpec(
        spec.name,
        consumes=tuple(t + suffix for t in spec.consumes),
        produces=tuple(t if t == DLQ else t + suffix for t in spec.produces),
    )


def _judge(tier: int) -> ServiceSpec:
    # Any tier may be a cascade's last (REAG_TIER_MODELS names fewer models), so any
    # may send its unconfident criteria to review.
    onward = (JUDGE_TIER[tier + 1],) if tier < N_TIERS else ()
    return ServiceSpec(
        f"judge-tier{tier}",
        consumes=(JUDGE_TIER[tier], THRESHOLDS),
        produces=(VERDICTS, *onward, ABSTAINS),
    )


SERVICES: dict[str, ServiceSpec] = {
    spec.name: spec
    for spec in (
        ServiceSpec("elicitor", consumes=(TRAFFIC,), produces=(INTENTIONS,)),
        ServiceSpec("retriever", consumes=(INTENTIONS,), produces=(INTERPRETATIONS,)),
        ServiceSpec("oracle", consumes=(INTERPRETATIONS,), produces=(ORACLES, JUDGE_TIER[1])),
        *(_judge(tier) for tier in JUDGE_TIER),
        ServiceSpec("ledger", consumes=(ORACLES, VERDICTS, ABSTAINS, REVIEWS), produces=(RESULTS,)),
        ServiceSpec("calibrator", consumes=(REVIEWS,), produces=(THRESHOLDS,)),
    )
}
