"""Zero-code capture over a real Kafka-protocol broker (Tansu, on a socket): an OTLP span on
``otlp_spans`` ends as a result in the ledger, and poison OTLP reaches the DLQ redacted.

Every service runs its real router in this process: the elicitor (OTLP and traffic),
retriever (BM25), oracle, a one-tier judge and the ledger, with scripted LLMs
(``FakeProvider``). The judge's tier has a threshold fitted on itself and its annotators
say YES with 0.99, so each criterion is accepted at tier 1 and the case completes: the
test checks delivery, ids and redaction from the span to the result, not judging.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from reag.corpus.model import Document
from reag.elicitation.directory import PersonaDirectory
from reag.ids import case_id_for
from reag.judging.identity import JudgeIdentity
from reag.judging.tier import JudgeTier
from reag.ledger.store import LedgerStore
from reag.llm.base import Message
from reag.llm.client import LLMClient
from reag.llm.scripted import SCRIPTED_CLAIMS, FakeProvider, oracle_answer
from reag.oracle.writer import OracleWriter
from reag.retrieval.reasoning import SelfReasoner
from reag.retrieval.retriever import Retriever, RetrieverConfig
from reag.traffic.otlp import request_to_json
from reag.traffic.policy import FixedPolicies, PolicyDirectory
from reag.traffic.shadow import ShadowGate, no_spend
from reag.v1 import events_pb2 as pb
from services.elicitor.handlers import build_router as elicitor_router
from services.elicitor.otlp import build_otlp_router
from services.elicitor.settings import ElicitorSettings
from services.judge.handlers import build_router as judge_router
from services.judge.main import build_tier, load_thresholds
from services.judge.settings import JudgeSettings
from services.kit.admin import ensure_topics
from services.kit.broker import make_broker
from services.kit.settings import KafkaSettings
from services.kit.testing import produce_events, read_events
from services.kit.topology import DLQ, OTLP_SPANS, RESULTS, THRESHOLDS, TRAFFIC
from services.ledger.handlers import build_router as ledger_router
from services.ledger.settings import LedgerSettings
from services.oracle.handlers import build_router as oracle_router
from services.oracle.settings import OracleSettings
from services.retriever.handlers import RetrieverDeps
from services.retriever.handlers import build_router as retriever_router
from services.retriever.settings import RetrieverSettings
from tests.integration.pipeline.scripted import reasoning_script

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

APP = "nutrition"
CANARY = "canary.otlp.e2e@example.org"
N_CRITERIA = 2


def oracle_script(messages: Sequence[Message], _options: dict[str, Any]) -> str:
    return oracle_answer(messages, SCRIPTED_CLAIMS[:2])


def sure_yes(_prompt: Any, _labels: Sequence[str]) -> dict[str, float]:
    return {"YES": 0.99, "NO": 0.01}


def kv(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(string_value=value))


def llm_spans(trace: str) -> ExportTraceServiceRequest:
    """What an OpenAI-instrumented app's Collector exports: a server span and a chat span."""
    server = Span(
        trace_id=bytes.fromhex(trace),
        span_id=bytes.fromhex("aaaaaaaaaaaaaaaa"),
        name="POST /chat",
        kind=Span.SPAN_KIND_SERVER,
        attributes=[kv("http.route", "/chat")],
    )
    chat = Span(
        trace_id=bytes.fromhex(trace),
        span_id=bytes.fromhex("bbbbbbbbbbbbbbbb"),
        parent_span_id=bytes.fromhex("aaaaaaaaaaaaaaaa"),
        name="chat gpt-4.1-mini",
        kind=Span.SPAN_KIND_CLIENT,
        start_time_unix_nano=1_700_000_000_000_000_000,
        end_time_unix_nano=1_700_000_001_200_000_000,
        attributes=[
            kv("gen_ai.operation.name", "chat"),
            kv("gen_ai.provider.name", "openai"),
            kv(
                "gen_ai.input.messages",
                json.dumps(
                    [
                        {
                            "role": "user",
                            "parts": [
                                {
                                    "type": "text",
                                    "content": f"Can I drink coconut water? Mail me: {CANARY}",
                                }
                            ],
                        }
                    ]
                ),
            ),
            kv(
                "gen_ai.output.messages",
                json.dumps(
                    [
                        {
                            "role": "assistant",
                            "parts": [{"type": "text", "content": "Yes, it is very healthy."}],
                        }
                    ]
                ),
            ),
            kv("user.id", "u-42"),
            kv("reag.profile.description", "On dialysis three times a week."),
        ],
    )
    request = ExportTraceServiceRequest()
    rs = ResourceSpans(scope_spans=[ScopeSpans(spans=[server, chat])])
    rs.resource.attributes.extend([kv("service.name", "diet-bot"), kv("reag.app", APP)])
    request.resource_spans.append(rs)
    return request


@dataclass
class Stack:
    kafka: KafkaSettings
    suffix: str
    ledger: LedgerStore

    @property
    def bootstrap(self) -> str:
        return self.kafka.bootstrap_servers


async def fitted_threshold(settings: JudgeSettings, deps: JudgeTier) -> pb.Threshold:
    """A tier-1 threshold as the calibrator publishes it: fitted on this very judge."""
    threshold = pb.Threshold(
        app=APP, tier=1, has_threshold=True, threshold=0.5, alpha=0.1, delta=0.1, mode="cascade"
    )
    threshold.computed_at.seconds = 1_000
    JudgeIdentity.of_judge(await deps.judge_for(APP)).stamp(threshold)
    return threshold


@pytest.fixture(scope="module")
async def stack(
    kafka_bootstrap: str, example_corpus: list[Document], tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Stack]:
    """Every service on topics ``<topic>.<suffix>`` for this module."""
    suffix = f".{uuid.uuid4().hex[:10]}"
    kafka = KafkaSettings(bootstrap_servers=kafka_bootstrap)
    await ensure_topics(kafka, suffix)
    await ensure_topics(kafka)  # the shared DLQ
    shared: dict[str, Any] = {"kafka": kafka, "topic_suffix": suffix}
    corpus = {APP: example_corpus}
    personas = PersonaDirectory(
        lambda app: [d for d in corpus.get(app, []) if d.kind == "persona"],
        lambda app: app in corpus,
    )
    policies = PolicyDirectory(FixedPolicies())
    elicitor = ElicitorSettings.model_validate(shared)
    retriever = RetrieverDeps(
        Retriever(RetrieverConfig(kernel="bm25", selection="fixed", k=3)),
        SelfReasoner(LLMClient(FakeProvider(chat_script=reasoning_script))),
        lambda app: corpus.get(app, []),
    )
    writer = OracleWriter(LLMClient(FakeProvider(chat_script=oracle_script)))
    judge = JudgeSettings(tier=1, tier_models="fake:tier1", **shared)
    judge_deps = build_tier(
        judge, LLMClient(FakeProvider(model="fake:tier1", label_script=sure_yes)), None
    )
    threshold = await fitted_threshold(judge, judge_deps)
    await produce_events(kafka_bootstrap, THRESHOLDS + suffix, [threshold], f"{APP}/1")
    await load_thresholds(judge, judge_deps)
    ledger = LedgerStore.open(f"sqlite:///{tmp_path_factory.mktemp('otlp') / 'ledger.db'}")

    broker = make_broker(kafka, f"otlp{suffix}")
    broker.include_router(build_otlp_router(elicitor, policies, personas.knows))
    broker.include_router(elicitor_router(elicitor, personas, policies, ShadowGate(no_spend)))
    broker.include_router(retriever_router(RetrieverSettings.model_validate(shared), retriever))
    broker.include_router(oracle_router(OracleSettings.model_validate(shared), writer))
    broker.include_router(judge_router(judge, judge_deps))
    broker.include_router(ledger_router(LedgerSettings.model_validate(shared), ledger))
    async with broker:
        await broker.start()
        yield Stack(kafka, suffix, ledger)
    ledger.close()


@pytest.mark.parametrize("encoding", ["otlp_proto", "otlp_json"])
async def test_an_otlp_span_ends_as_a_result_in_the_ledger(stack: Stack, encoding: str) -> None:
    trace = uuid.uuid4().hex
    spans = llm_spans(trace)
    value = spans.SerializeToString() if encoding == "otlp_proto" else request_to_json(spans)
    await produce_events(stack.bootstrap, OTLP_SPANS + stack.suffix, [value], f"otlp-{trace}")
    case_id = case_id_for(APP, trace)

    def complete(results: list[pb.Result]) -> bool:
        return any(r.meta.case_id == case_id and r.complete for r in results)

    results = await read_events(
        stack.bootstrap, RESULTS + stack.suffix, pb.Result, complete, timeout_s=150
    )
    final = [r for r in results if r.meta.case_id == case_id and r.complete]
    assert final, f"no complete result for {case_id} within 150 s"
    result = final[-1]
    assert result.outcome == pb.OUTCOME_PASS
    assert len(result.criteria) == N_CRITERIA
    assert all(c.tier == 1 and c.accepted for c in result.criteria)
    assert result.meta.origin == pb.ORIGIN_LIVE
    assert result.query == "Can I drink coconut water? Mail me: [REDACTED:EMAIL]"
    assert result.persona_category == "Chronic kidney disease"  # matched from the profile
    assert CANARY.encode() not in result.SerializeToString()
    stored = await asyncio.to_thread(stack.ledger.get_result, case_id)
    assert stored == result

    (traffic,) = [
        t
        for t in await read_events(
            stack.bootstrap,
            TRAFFIC + stack.suffix,
            pb.Traffic,
            lambda ts: any(t.meta.case_id == case_id for t in ts),
            timeout_s=10,
        )
        if t.meta.case_id == case_id
    ]
    assert (traffic.request_id, traffic.target, traffic.profile.user_id) == (
        trace,
        "diet-bot",
        "u-42",
    )
    assert CANARY.encode() not in traffic.SerializeToString()


async def test_poison_otlp_reaches_the_dlq_with_a_reason_and_redacted(stack: Stack) -> None:
    key = f"poison-{uuid.uuid4().hex[:8]}"
    poison = b'{"resourceSpans": [{"note": "from ' + CANARY.encode() + b'", '
    await produce_events(stack.bootstrap, OTLP_SPANS + stack.suffix, [poison], key)

    def mine(letters: list[pb.DeadLetter]) -> list[pb.DeadLetter]:
        return [x for x in letters if x.key == key.encode()]

    letters = mine(
        await read_events(
            stack.bootstrap, DLQ, pb.DeadLetter, lambda ls: bool(mine(ls)), timeout_s=60
        )
    )
    (letter,) = letters
    assert (letter.service, letter.topic, letter.error_type) == (
        "elicitor",
        OTLP_SPANS + stack.suffix,
        "undecodable",
    )
    assert "otlp_json" in letter.reason
    assert CANARY.encode() not in letter.SerializeToString()
    assert b"[REDACTED:EMAIL]" in letter.value
    assert letter.value.startswith(b'{"resourceSpans"')
