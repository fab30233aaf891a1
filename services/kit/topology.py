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
# Written by the OpenTelemetry Collector's Kafka exporter (its default topic for traces),
# not by reag: an ExportTraceServiceRequest, otlp_proto or otlp_json.
OTLP_SPANS = "otlp_spans"

N_TIERS = len(JUDGE_TIER)


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    # The protobuf message type: a name in proto/reag/v1/events.proto, or the full name
    # of a message reag does not own (OTLP).
    payload: str
    compacted: bool = False
    # Raw traffic lands here before reag redacts it, so it is kept only for
    # KafkaSettings.ingress_retention_ms (docs/pipeline.md, "Raw traffic and retention").
    ingress: bool = False

    @property
    def reag_event(self) -> bool:
        """Whether the payload is a reag.v1 message (dead letters of it can be decoded)."""
        return "." not in self.payload


TOPICS: tuple[TopicSpec, ...] = (
    TopicSpec(TRAFFIC, "Traffic", ingress=True),
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
    TopicSpec(
        OTLP_SPANS, "opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest", ingress=True
    ),
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
        # OTLP spans become Traffic events on the elicitor's own input (zero-code capture).
        ServiceSpec("elicitor", consumes=(TRAFFIC, OTLP_SPANS), produces=(INTENTIONS, TRAFFIC)),
        ServiceSpec("retriever", consumes=(INTENTIONS,), produces=(INTERPRETATIONS,)),
        ServiceSpec("oracle", consumes=(INTERPRETATIONS,), produces=(ORACLES, JUDGE_TIER[1])),
        *(_judge(tier) for tier in JUDGE_TIER),
        # Its gRPC TrafficService produces apps' live traffic (services/ledger/traffic_api.py).
        ServiceSpec(
            "ledger",
            consumes=(ORACLES, VERDICTS, ABSTAINS, REVIEWS),
            produces=(RESULTS, TRAFFIC),
        ),
        ServiceSpec("calibrator", consumes=(REVIEWS,), produces=(THRESHOLDS,)),
    )
}
