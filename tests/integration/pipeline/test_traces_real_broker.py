"""One case, one trace: every service's spans and every LLM call's span on a real broker.

All six services' real routers (elicitor, retriever, oracle, judge tiers 1 and 2,
ledger) run in this process over the embedded Tansu broker, with FastStream's
telemetry middleware and scripted models, and export to an in-memory exporter
on the global tracer provider (which the LLM layer traces through). One
traffic event goes in; its spans must share one trace id and chain
elicitor → retriever → oracle → judge tier 1 → judge tier 2 → ledger through
the Kafka headers, with each LLM span under the consume span of the service
that made the call, and no span may carry the query, the response or the
profile.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from reag.corpus.model import Document
from reag.elicitation.directory import PersonaDirectory
from reag.ids import case_id_for
from reag.judging.identity import JudgeIdentity
from reag.judging.prompt import RESPONSE_TAG
from reag.judging.tier import JudgeTier
from reag.ledger.store import LedgerStore
from reag.llm.accounting import Caller
from reag.llm.base import Message
from reag.llm.client import LLMClient
from reag.llm.scripted import SCRIPTED_CLAIMS, FakeProvider, oracle_answer
from reag.llm.tracing import TRACER_NAME
from reag.oracle.writer import OracleWriter
from reag.retrieval.reasoning import SelfReasoner
from reag.retrieval.retriever import Retriever, RetrieverConfig
from reag.traffic.policy import FixedPolicies, PolicyDirectory
from reag.traffic.shadow import ShadowGate, no_spend
from reag.v1 import events_pb2 as pb
from services.elicitor.handlers import build_router as elicitor_router
from services.elicitor.settings import ElicitorSettings
from services.judge.handlers import build_router as judge_router
from services.judge.main import build_tier, load_thresholds
from services.judge.settings import JudgeSettings
from services.kit.admin import ensure_topics
from services.kit.broker import make_broker
from services.kit.settings import KafkaSettings
from services.kit.testing import produce_events, read_events
from services.kit.topology import (
    INTENTIONS,
    INTERPRETATIONS,
    JUDGE_TIER,
    ORACLES,
    RESULTS,
    THRESHOLDS,
    TRAFFIC,
    VERDICTS,
)
from services.ledger.handlers import build_router as ledger_router
from services.ledger.settings import LedgerSettings
from services.oracle.handlers import build_router as oracle_router
from services.oracle.settings import OracleSettings
from services.retriever.handlers import RetrieverDeps
from services.retriever.handlers import build_router as retriever_router
from services.retriever.settings import RetrieverSettings
from tests.integration.pipeline.scripted import reasoning_script
from tests.spans import global_spans

pytestmark = [pytest.mark.kafka]

APP = "nutrition"
QUERY = "Can I drink coconut water after my session? TRACE-QUERY-7c1"
RESPONSE = "Yes, drink as much as you like. TRACE-RESPONSE-7c1"
PROFILE = "On dialysis three times a week. TRACE-PROFILE-7c1"
SECRETS = ("TRACE-QUERY-7c1", "TRACE-RESPONSE-7c1", "TRACE-PROFILE-7c1", "coconut", "dialysis")
N_CRITERIA = 2
TIER_MODELS = "fake:tier1,fake:tier2"


def oracle_script(messages: Sequence[Message], _options: dict[str, Any]) -> str:
    return oracle_answer(messages, SCRIPTED_CLAIMS[:N_CRITERIA])


def unsure(_prompt: Any, _labels: Sequence[str]) -> dict[str, float]:
    return {"YES": 0.6, "NO": 0.4}  # below tier 1's threshold: escalated


def sure(prompt: Any, _labels: Sequence[str]) -> dict[str, float]:
    text = prompt if isinstance(prompt, str) else " ".join(m.content for m in prompt)
    assert RESPONSE_TAG in text
    return {"YES": 0.99, "NO": 0.01}  # above tier 2's: accepted


async def _judge(
    tier: int, script: Any, shared: dict[str, Any], suffix: str, bootstrap: str
) -> tuple[JudgeSettings, JudgeTier]:
    settings = JudgeSettings(tier=tier, tier_models=TIER_MODELS, **shared)
    client = LLMClient(
        FakeProvider(model=f"fake:tier{tier}", label_script=script), Caller("judge", str(tier))
    )
    deps = build_tier(settings, client, None)
    threshold = pb.Threshold(
        app=APP, tier=tier, has_threshold=True, threshold=0.9, alpha=0.1, delta=0.1
    )
    threshold.mode = "cascade"
    threshold.computed_at.seconds = 1_000
    JudgeIdentity.of_judge(await deps.judge_for(APP)).stamp(threshold)
    await produce_events(bootstrap, THRESHOLDS + suffix, [threshold], f"{APP}/{tier}")
    return settings, deps


@pytest.fixture
async def stack(
    kafka_bootstrap: str, example_corpus: list[Document], tmp_path: Path
) -> AsyncIterator[tuple[str, InMemorySpanExporter]]:
    provider, spans = global_spans()
    suffix = f".{uuid.uuid4().hex[:10]}"
    kafka = KafkaSettings(bootstrap_servers=kafka_bootstrap)
    await ensure_topics(kafka, suffix)
    await ensure_topics(kafka)
    shared: dict[str, Any] = {"kafka": kafka, "topic_suffix": suffix}
    corpus = {APP: example_corpus}
    personas = PersonaDirectory(
        lambda app: [d for d in corpus.get(app, []) if d.kind == "persona"],
        lambda app: app in corpus,
    )
    retriever = RetrieverDeps(
        Retriever(RetrieverConfig(kernel="bm25", selection="fixed", k=3)),
        SelfReasoner(
            LLMClient(
                FakeProvider(model="fake:reasoner", chat_script=reasoning_script),
                Caller("retriever"),
            )
        ),
        lambda app: corpus.get(app, []),
    )
    writer = OracleWriter(
        LLMClient(FakeProvider(model="fake:oracle", chat_script=oracle_script), Caller("oracle"))
    )
    judges = [
        await _judge(1, unsure, shared, suffix, kafka_bootstrap),
        await _judge(2, sure, shared, suffix, kafka_bootstrap),
    ]
    for settings, deps in judges:
        await load_thresholds(settings, deps)
    ledger = LedgerStore.open(f"sqlite:///{tmp_path / 'ledger.db'}")
    broker = make_broker(kafka, f"traces{suffix}", tracer_provider=provider)
    broker.include_router(
        elicitor_router(
            ElicitorSettings.model_validate(shared),
            personas,
            PolicyDirectory(FixedPolicies()),
            ShadowGate(no_spend),
        )
    )
    broker.include_router(retriever_router(RetrieverSettings.model_validate(shared), retriever))
    broker.include_router(oracle_router(OracleSettings.model_validate(shared), writer))
    for settings, deps in judges:
        broker.include_router(judge_router(settings, deps))
    broker.include_router(ledger_router(LedgerSettings.model_validate(shared), ledger))
    async with broker:
        await broker.start()
        spans.clear()
        yield suffix, spans
    ledger.close()


def _traffic(case: str) -> pb.Traffic:
    event = pb.Traffic(
        query=QUERY,
        actual_response=RESPONSE,
        profile=pb.UserProfile(description=PROFILE),
        request_id=case,
    )
    event.meta.case_id, event.meta.app = case_id_for(APP, case), APP
    event.meta.schema_version = pb.SCHEMA_VERSION_1
    return event


def _topic_of(span: ReadableSpan, suffix: str) -> str | None:
    """The unsuffixed topic a FastStream span is about (``<topic><suffix> <action>``)."""
    topic, _, _action = span.name.rpartition(" ")
    return topic.removesuffix(suffix) if topic.endswith(suffix) else None


def _attribute_text(span: ReadableSpan) -> str:
    events = [(e.name, dict(e.attributes or {})) for e in span.events]
    links = [dict(link.attributes or {}) for link in span.links]
    return repr((span.name, dict(span.attributes or {}), events, links))


# Who consumes what: the service whose consume span a hop is.
CHAIN = (TRAFFIC, INTENTIONS, INTERPRETATIONS, JUDGE_TIER[1], JUDGE_TIER[2], VERDICTS)
LLM_UNDER = {  # LLM span's model -> the topic its service consumed, and who was charged
    "reasoner": (INTENTIONS, "retriever", None),
    "oracle": (INTERPRETATIONS, "oracle", None),
    "tier1": (JUDGE_TIER[1], "judge", "1"),
    "tier2": (JUDGE_TIER[2], "judge", "2"),
}


async def test_one_case_is_one_trace_chained_through_every_service(
    stack: tuple[str, InMemorySpanExporter], kafka_bootstrap: str
) -> None:
    suffix, exporter = stack
    event = _traffic(f"trace-{uuid.uuid4().hex[:8]}")
    case = event.meta.case_id
    await produce_events(kafka_bootstrap, TRAFFIC + suffix, [event], case)
    results = await read_events(
        kafka_bootstrap,
        RESULTS + suffix,
        pb.Result,
        lambda rs: any(r.meta.case_id == case and r.complete for r in rs),
        timeout_s=120,
    )
    assert any(r.meta.case_id == case and r.outcome == pb.OUTCOME_PASS for r in results)

    finished = exporter.get_finished_spans()
    llm = [
        s
        for s in finished
        if s.instrumentation_scope is not None and s.instrumentation_scope.name == TRACER_NAME
    ]
    kafka = [s for s in finished if _topic_of(s, suffix) not in (None, THRESHOLDS)]
    case_spans = [*kafka, *llm]
    assert {s.context.trace_id for s in case_spans} == {kafka[0].context.trace_id}, (
        "the case's spans are spread over several traces"
    )
    by_id = {s.context.span_id: s for s in finished}

    def parent(span: ReadableSpan) -> ReadableSpan | None:
        return by_id.get(span.parent.span_id) if span.parent is not None else None

    def consumed(topic: str) -> list[ReadableSpan]:
        return [
            s for s in kafka if s.kind is SpanKind.CONSUMER and s.name == f"{topic}{suffix} process"
        ]

    # Each hop's consume span hangs off the producer span the upstream service opened
    # while it handled the event: the context crossed the topic in the Kafka headers.
    for upstream, downstream in itertools.pairwise(CHAIN):
        hops = consumed(downstream)
        assert hops, f"no {downstream} consume span"
        for hop in hops:
            producer = parent(hop)
            assert producer is not None, f"{hop.name} has no parent in the trace"
            assert producer.kind is SpanKind.PRODUCER
            assert _topic_of(producer, suffix) == downstream
            handler = parent(producer)
            assert handler is not None
            assert handler.name == f"{upstream}{suffix} process", (hop.name, handler.name)
    assert len(consumed(JUDGE_TIER[1])) == len(consumed(JUDGE_TIER[2])) == N_CRITERIA
    (oracle_in_ledger,) = consumed(ORACLES)
    assert parent(parent(oracle_in_ledger) or oracle_in_ledger) in consumed(INTERPRETATIONS)

    # Every LLM call is a span under the consume span of the service that made it.
    seen = set()
    for span in llm:
        attributes = dict(span.attributes or {})
        model = str(attributes["gen_ai.request.model"])
        topic, service, tier = LLM_UNDER[model]
        handler = parent(span)
        assert handler is not None
        assert handler in consumed(topic), (span.name, handler.name)
        assert span.kind is SpanKind.CLIENT
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.provider.name"] == attributes["gen_ai.system"] == "fake"
        assert int(str(attributes["gen_ai.usage.input_tokens"])) > 0
        assert int(str(attributes["gen_ai.usage.output_tokens"])) > 0
        assert attributes["reag.service"] == service
        assert attributes.get("reag.tier") == tier
        seen.add(model)
    assert seen == set(LLM_UNDER)

    # Ids and numbers only: no span carries the query, the response or the profile.
    leaks = [
        (span.name, secret)
        for span in finished
        for secret in SECRETS
        if secret.lower() in _attribute_text(span).lower()
    ]
    assert not leaks
