"""PII never gets past the door: 100 live events carrying canary PII go through every
service on a real Kafka-protocol broker (Tansu, on a socket), and afterwards the canaries
are nowhere reag keeps anything.

The events come in by three ways: the Python recorder (redacts in the app's process), an
app producing raw ``Traffic`` to ``reag.traffic.v1`` itself, and OTLP spans on
``otlp_spans`` (both redacted by the elicitor), plus one poison message. The canaries (an
e-mail address, a phone number, a Luhn-valid card number) sit in queries, responses,
profile attributes and span attributes. Every scripted model echoes its prompt into its
output (the self-reasoning's reasons and analysis, the oracle's objective and criteria),
so a canary that reached any prompt would surface downstream.

Looked at afterwards: the raw bytes (keys, values, headers) of every topic past ingestion,
the dead letters and the review topic (``reag.abstains.v1``) among them; a dump of the
ledger's database; every log record any logger emitted at DEBUG; every span the services
traced; the Prometheus exposition. The raw ingress topics hold PII by design (they are
what reag redacts; short retention, docs/integrating.md) and are the only exception.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import sqlite3
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import REGISTRY, generate_latest

from reag.client import Recorder
from reag.corpus.model import Document
from reag.elicitation.directory import PersonaDirectory
from reag.ids import case_id_for
from reag.judging.identity import JudgeIdentity
from reag.judging.prompt import RESPONSE_TAG
from reag.ledger.store import LedgerStore
from reag.llm.base import Message
from reag.llm.client import LLMClient
from reag.llm.scripted import SCRIPTED_CLAIMS, FakeProvider, oracle_answer
from reag.oracle.schema import MAX_OBJECT_CHARS
from reag.oracle.writer import OracleWriter
from reag.retrieval.reasoning import SelfReasoner
from reag.retrieval.retriever import Retriever, RetrieverConfig
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
from services.kit.testing import produce_events, read_events, read_values
from services.kit.topology import (
    ABSTAINS,
    DLQ,
    INTENTIONS,
    INTERPRETATIONS,
    JUDGE_TIER,
    ORACLES,
    OTLP_SPANS,
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

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

APP = "nutrition"
EMAIL = "canary.pii.9f3@example.org"
PHONE = "+44 20 7946 0958"
CARD = "4111 1111 1111 1111"
# Every spelling a canary could leak in: as written, digits only, the e-mail's local part.
CANARIES = (EMAIL, "canary.pii.9f3", PHONE, "2079460958", CARD, "4111111111111111")
N_RECORDED, N_RAW, N_OTLP = 40, 30, 30
N_CRITERIA = 2


def _echo(messages: Sequence[Message], limit: int = 400) -> str:
    """The prompt's fenced inputs, echoed: what a leak into a prompt would look like."""
    text = " ".join(m.content for m in messages)
    fenced = re.findall(r"<untrusted_[a-z_]+[^>]*>\n(.*?)\n</untrusted_", text, re.S)
    return " | ".join(fenced)[:limit] or text[-limit:]


def reasoning_script(messages: Sequence[Message], options: dict[str, Any]) -> str:
    if options["json_schema"]["title"] == "ApplicationAnalysis":
        return json.dumps({"analysis": f"The request says: {_echo(messages, 650)}"})
    body = re.search(
        r"<untrusted_document [^>]*>\n(.*?)\n</untrusted_document>", messages[-1].content, re.S
    )
    first = re.split(r"(?<=[.!?])\s", body.group(1).strip())[0] if body else ""
    return json.dumps(
        {
            "relevant": True,
            "reason": _echo(messages, 150),
            "evidence": [{"sentence": first, "why": _echo(messages, 110)}],
        }
    )


def oracle_script(messages: Sequence[Message], _options: dict[str, Any]) -> str:
    """Within the oracle schema's length bounds, so the echo is stored, not refused."""
    draft = json.loads(oracle_answer(messages, SCRIPTED_CLAIMS[:N_CRITERIA]))
    draft["TestObjective"] = f"Check the answer to: {_echo(messages, 250)}"
    draft["ExpectedResultsDescription"] = f"It fits this user: {_echo(messages, 700)}"
    # The echo in the first criterion only: the same echo in each would make them repeats.
    lead = "an answer to: "  # a longer echo than the schema allows is refused, not stored
    draft["PassFailCriteria"][0]["object"] = lead + _echo(messages, MAX_OBJECT_CHARS - len(lead))
    return json.dumps(draft)


def judge_script(prompt: Any, _labels: Sequence[str]) -> dict[str, float]:
    """Sure on even cases (accepted), unsure on odd ones (abstained: the review topic)."""
    text = prompt if isinstance(prompt, str) else " ".join(m.content for m in prompt)
    case = text.rpartition(f"<{RESPONSE_TAG}>")[2]  # the last fenced response: the case's
    p = 0.99 if "EVEN-CASE" in case else 0.6
    return {"YES": p, "NO": 1 - p}


def _response(i: int) -> str:
    parity = "EVEN-CASE" if i % 2 == 0 else "ODD-CASE"
    return f"Yes, it is healthy ({parity}). We will call you on {PHONE} or bill {CARD}."


def _query(i: int) -> str:
    return f"Case {i}: can I drink coconut water? Reach me at {EMAIL} or {PHONE}."


def _kv(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(string_value=value))


def _spans(i: int, trace: str) -> ExportTraceServiceRequest:
    messages_in = [{"role": "user", "parts": [{"type": "text", "content": _query(i)}]}]
    messages_out = [{"role": "assistant", "parts": [{"type": "text", "content": _response(i)}]}]
    chat = Span(
        trace_id=bytes.fromhex(trace),
        span_id=bytes.fromhex("bbbbbbbbbbbbbbbb"),
        name="chat gpt-4.1-mini",
        kind=Span.SPAN_KIND_CLIENT,
        start_time_unix_nano=1_700_000_000_000_000_000,
        end_time_unix_nano=1_700_000_001_000_000_000,
        attributes=[
            _kv("gen_ai.operation.name", "chat"),
            _kv("gen_ai.input.messages", json.dumps(messages_in)),
            _kv("gen_ai.output.messages", json.dumps(messages_out)),
            _kv("user.id", EMAIL),
            _kv("user.email", EMAIL),
            _kv("reag.profile.description", f"On dialysis; phone {PHONE}."),
            _kv("reag.profile.contact", EMAIL),
        ],
    )
    request = ExportTraceServiceRequest()
    rs = ResourceSpans(scope_spans=[ScopeSpans(spans=[chat])])
    rs.resource.attributes.extend([_kv("service.name", "diet-bot"), _kv("reag.app", APP)])
    request.resource_spans.append(rs)
    return request


def _raw_traffic(i: int) -> pb.Traffic:
    event = pb.Traffic(
        request_id=f"raw-{i}",
        query=_query(i),
        actual_response=_response(i),
        profile=pb.UserProfile(
            user_id=EMAIL, description=f"On dialysis three times a week. Card {CARD}."
        ),
    )
    event.profile.attributes["contact"] = EMAIL
    event.profile.attributes["phone"] = PHONE
    event.meta.case_id = case_id_for(APP, f"raw-{i}")
    event.meta.app = APP
    event.meta.schema_version = pb.SCHEMA_VERSION_1
    event.meta.origin = pb.ORIGIN_LIVE
    return event


class _Everything(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def every_log_line() -> Iterator[list[str]]:
    handler = _Everything()
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler.lines
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


async def _raw_topic(bootstrap: str, topic: str) -> list[bytes]:
    """Every record's key, value and headers on ``topic``, as bytes."""
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id=None
    )
    await consumer.start()
    out: list[bytes] = []
    try:
        idle = 0
        while idle < 3:
            batch = await consumer.getmany(timeout_ms=500)
            records = [r for rs in batch.values() for r in rs]
            idle = 0 if records else idle + 1
            for r in records:
                out.append(r.key or b"")
                out.append(r.value or b"")
                out.extend(k.encode() + b"=" + v for k, v in (r.headers or ()))
    finally:
        await consumer.stop()
    return out


def _leaks(blobs: Sequence[bytes | str]) -> list[str]:
    found = []
    for blob in blobs:
        data = blob if isinstance(blob, bytes) else blob.encode()
        found += [c for c in CANARIES if c.encode() in data]
    return sorted(set(found))


@pytest.fixture
async def stack(
    kafka_bootstrap: str, example_corpus: list[Document], tmp_path: Path
) -> AsyncIterator[tuple[str, Path, InMemorySpanExporter]]:
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
    policies = PolicyDirectory(FixedPolicies())
    elicitor = ElicitorSettings.model_validate(shared)
    retriever = RetrieverDeps(
        Retriever(RetrieverConfig(kernel="bm25", selection="fixed", k=3)),
        SelfReasoner(LLMClient(FakeProvider(chat_script=reasoning_script))),
        lambda app: corpus.get(app, []),
    )
    writer = OracleWriter(LLMClient(FakeProvider(chat_script=oracle_script)))
    judge = JudgeSettings(tier=1, tier_models="fake:tier1", **shared)
    deps = build_tier(
        judge, LLMClient(FakeProvider(model="fake:tier1", label_script=judge_script)), None
    )
    threshold = pb.Threshold(
        app=APP, tier=1, has_threshold=True, threshold=0.9, alpha=0.1, delta=0.1, mode="cascade"
    )
    threshold.computed_at.seconds = 1_000
    JudgeIdentity.of_judge(await deps.judge_for(APP)).stamp(threshold)
    await produce_events(kafka_bootstrap, THRESHOLDS + suffix, [threshold], f"{APP}/1")
    await load_thresholds(judge, deps)
    db = tmp_path / "ledger.db"
    ledger = LedgerStore.open(f"sqlite:///{db}")
    spans = InMemorySpanExporter()
    tracer = TracerProvider()
    tracer.add_span_processor(SimpleSpanProcessor(spans))

    broker = make_broker(kafka, f"canaries{suffix}", tracer_provider=tracer)
    broker.include_router(build_otlp_router(elicitor, policies, personas.knows))
    broker.include_router(elicitor_router(elicitor, personas, policies, ShadowGate(no_spend)))
    broker.include_router(retriever_router(RetrieverSettings.model_validate(shared), retriever))
    broker.include_router(oracle_router(OracleSettings.model_validate(shared), writer))
    broker.include_router(judge_router(judge, deps))
    broker.include_router(ledger_router(LedgerSettings.model_validate(shared), ledger))
    async with broker:
        await broker.start()
        yield suffix, db, spans
    ledger.close()


async def test_canary_pii_appears_nowhere_past_the_door(
    stack: tuple[str, Path, InMemorySpanExporter],
    kafka_bootstrap: str,
    every_log_line: list[str],
) -> None:
    suffix, db, spans = stack
    # 1. the recorder, in the app's process
    recorder = Recorder(bootstrap_servers=kafka_bootstrap, app=APP, topic=TRAFFIC + suffix)
    with recorder:
        for i in range(N_RECORDED):
            assert recorder.record(
                query=_query(i),
                response=_response(i),
                user_id=EMAIL,
                request_id=f"rec-{i}",
                profile={"contact": EMAIL, "phone": PHONE, "diet": "low potassium"},
                description="On dialysis three times a week.",
            )
        assert await asyncio.to_thread(recorder.flush, 30.0)
    # 2. an app producing raw traffic itself, and one poison message
    offset = N_RECORDED
    raw = [_raw_traffic(offset + i) for i in range(N_RAW)]
    poison = b"\xff\xfe not protobuf, from " + EMAIL.encode() + b" card " + CARD.encode()
    await produce_events(kafka_bootstrap, TRAFFIC + suffix, [*raw, poison], "raw-or-poison")
    # 3. OTLP spans from the Collector
    offset += N_RAW
    traces = [uuid.uuid4().hex for _ in range(N_OTLP)]
    await produce_events(
        kafka_bootstrap,
        OTLP_SPANS + suffix,
        [_spans(offset + i, t).SerializeToString() for i, t in enumerate(traces)],
        "otlp",
    )
    expected = {
        *(case_id_for(APP, f"rec-{i}") for i in range(N_RECORDED)),
        *(e.meta.case_id for e in raw),
        *(case_id_for(APP, t) for t in traces),
    }
    assert len(expected) == N_RECORDED + N_RAW + N_OTLP

    def all_complete(results: list[pb.Result]) -> bool:
        return {r.meta.case_id for r in results if r.complete} >= expected

    results = await read_events(
        kafka_bootstrap, RESULTS + suffix, pb.Result, all_complete, timeout_s=300
    )
    done = {r.meta.case_id for r in results if r.complete}
    assert done >= expected, f"{len(expected - done)} of 100 cases did not complete"
    outcomes = {r.outcome for r in results if r.complete}
    assert pb.OUTCOME_PASS in outcomes  # even cases: accepted at tier 1
    letters = await read_events(
        kafka_bootstrap,
        DLQ,
        pb.DeadLetter,
        lambda ls: any(x.key == b"raw-or-poison" and x.topic == TRAFFIC + suffix for x in ls),
    )
    (letter,) = [x for x in letters if x.topic == TRAFFIC + suffix]
    assert letter.error_type
    assert letter.reason
    assert b"[REDACTED:EMAIL]" in letter.value

    past_the_door = [
        INTENTIONS,
        INTERPRETATIONS,
        ORACLES,
        JUDGE_TIER[1],
        VERDICTS,
        ABSTAINS,
        RESULTS,
    ]
    topic_bytes = {t: await _raw_topic(kafka_bootstrap, t + suffix) for t in past_the_door}
    assert topic_bytes[ABSTAINS], "odd cases should have reached the review topic"
    assert topic_bytes[VERDICTS], "even cases should have been accepted"
    for topic, blobs in topic_bytes.items():
        assert not _leaks(blobs), f"canaries on {topic}: {_leaks(blobs)}"
    dead = [x.SerializeToString() for x in letters]
    assert not _leaks(dead), f"canaries in dead letters: {_leaks(dead)}"
    # The elicitor republishes OTLP spans as redacted Traffic on the (raw) traffic topic;
    # those events, unlike the app's own raw ones, must be clean.
    otlp_cases = {case_id_for(APP, t) for t in traces}

    def parsed(values: list[bytes]) -> list[pb.Traffic]:
        out = []
        for value in values:
            with contextlib.suppress(DecodeError):
                out.append(pb.Traffic.FromString(value))
        return out

    values = await read_values(
        kafka_bootstrap,
        TRAFFIC + suffix,
        lambda vs: {t.meta.case_id for t in parsed(vs)} >= otlp_cases,
        timeout_s=30,
    )
    republished = [t.SerializeToString() for t in parsed(values) if t.meta.case_id in otlp_cases]
    assert len(republished) >= N_OTLP
    assert not _leaks(republished)

    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        cells = [
            value if isinstance(value, bytes) else str(value).encode()
            for table in tables
            for row in conn.execute(f'SELECT * FROM "{table}"')
            for value in row
        ]
    stored = b"\n".join(cells)
    assert b"[REDACTED:EMAIL]" in stored  # the ledger did store the redacted queries
    assert not _leaks(cells), f"canaries in the ledger's database: {_leaks(cells)}"
    assert every_log_line, "no log records captured"
    assert not _leaks(every_log_line), f"canaries in logs: {_leaks(every_log_line)}"
    finished = spans.get_finished_spans()
    assert finished, "no spans captured"
    span_text = [
        repr(
            (
                s.name,
                dict(s.attributes or {}),
                [(e.name, dict(e.attributes or {})) for e in s.events],
            )
        )
        for s in finished
    ]
    assert not _leaks(span_text), f"canaries in spans: {_leaks(span_text)}"
    assert not _leaks([generate_latest(REGISTRY)])
