"""Hostile payloads for every consumer of every service, and the services to feed them to.

Shared by the in-process fuzz test (``tests/unit/services/test_fuzz_consumers.py``,
FastStream's TestKafkaBroker) and its sample over the real broker
(``tests/integration/kit/test_fuzz_real_broker.py``). Each consumer of
``services.kit.topology.SERVICES`` is built from its service's own
``build_router`` with in-memory or SQLite dependencies and a scripted
zero-latency model (this measures reag's handling of bad input, not verdicts).

Free-text fields of every good event carry ``CANARY``, so a test can check that
no dead letter's reason or header echoes what a user or a model wrote.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faststream.kafka import KafkaRouter
from google.protobuf.message import DecodeError, Message
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from reag.calibration.store import CalibrationStore
from reag.corpus.model import Document
from reag.elicitation.directory import PersonaDirectory
from reag.ledger.store import LedgerStore
from reag.llm.base import Message as ChatMessage
from reag.llm.client import LLMClient
from reag.llm.scripted import FakeProvider
from reag.oracle.writer import OracleWriter
from reag.retrieval.retriever import Retriever, RetrieverConfig
from reag.traffic.policy import FixedPolicies, PolicyDirectory
from reag.traffic.shadow import ShadowGate, no_spend
from reag.v1 import events_pb2 as pb
from services.calibrator.handlers import build_router as calibrator_router
from services.calibrator.main import build_recalibrator
from services.calibrator.settings import CalibratorSettings
from services.elicitor.handlers import build_router as elicitor_router
from services.elicitor.otlp import build_otlp_router
from services.elicitor.settings import ElicitorSettings
from services.judge.handlers import build_router as judge_router
from services.judge.main import build_tier
from services.judge.settings import JudgeSettings
from services.kit.codec import REQUIRED_FIELDS, TYPE_HEADER
from services.kit.settings import DeliverySettings, KafkaSettings
from services.kit.topology import (
    ABSTAINS,
    INTENTIONS,
    INTERPRETATIONS,
    JUDGE_TIER,
    ORACLES,
    OTLP_SPANS,
    REVIEWS,
    SERVICES,
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

APP = "fuzz"
CANARY = "CANARY-7f3a9c"
# Small enough that an oversized payload is cheap to build, large enough for every good event.
MAX_EVENT_BYTES = 16_384
# What any consumer may answer a poison payload with (services/kit/codec.py and the handlers).
POISON = frozenset(
    {
        "empty",
        "oversized",
        "undecodable",
        "missing_field",
        "unknown_schema_version",
        "app_not_loaded",
        "wrong_type",
        "no_spans",
        "no_persona_categories",
    }
)
# Longest reason a dead letter may carry, whatever the payload's size.
MAX_REASON_CHARS = 400

CORPUS = [
    Document(
        app=APP,
        kind="persona",
        local_id="ckd",
        title="Chronic kidney disease",
        content="Adults on dialysis watch potassium.",
        source="p.yaml",
        metadata={"keywords": ["dialysis", "kidney"]},
    ),
    Document(
        app=APP,
        kind="requirement",
        local_id="FR-1",
        title="Potassium flag",
        content="The app flags potassium above 200 mg per portion for dialysis users.",
        source="r.md",
    ),
    Document(
        app=APP,
        kind="domain_knowledge",
        local_id="DK-1",
        title="Coconut water",
        content="Coconut water is rich in potassium.",
        source="d.md",
    ),
]
ORACLE_JSON = json.dumps(
    {
        "TestObjective": "Check the potassium flag for a dialysis user.",
        "RequestInScope": True,
        "ExpectedResultsDescription": "The response flags high potassium.",
        "PassFailCriteria": [
            {
                "concern": "safety",
                "rule": "Flag potassium for dialysis users.",
                "sources": ["requirement/FR-1"],
                "verb": "states",
                "object": "a High potassium flag",
            }
        ],
    }
)


# --- good events, one per type, free text marked with the canary --------------------


def meta(case: str) -> pb.EventMeta:
    return pb.EventMeta(case_id=case, app=APP, schema_version=pb.SCHEMA_VERSION_1)


def _persona() -> pb.Persona:
    return pb.Persona(category_id="ckd", category_name="CKD", description=f"{CANARY} dialysis")


def _request(case: str) -> pb.JudgeRequest:
    return pb.JudgeRequest(
        meta=meta(case),
        criterion=pb.Criterion(
            criterion_id=f"{case}/c0", index=0, text=f"{CANARY} PASS if potassium is flagged."
        ),
        oracle_id=f"{case}/oracle",
        n_criteria=1,
        query=f"{CANARY} Can I drink coconut water?",
        actual_response=f"{CANARY} Yes. SURE-YES",
        persona=_persona(),
        test_objective=f"{CANARY} objective",
        expected_results=f"{CANARY} expected",
    )


def _intention(case: str) -> pb.Intention:
    return pb.Intention(
        meta=meta(case),
        query=f"{CANARY} Can I drink coconut water on dialysis?",
        persona=_persona(),
        actual_response=f"{CANARY} Yes, enjoy.",
    )


def good_event(type_name: str, case: str) -> Message:
    """A valid event of ``type_name`` for case ``case`` of the fuzz app."""
    if type_name == "Traffic":
        return pb.Traffic(
            meta=pb.EventMeta(
                case_id=case,
                app=APP,
                schema_version=pb.SCHEMA_VERSION_1,
                origin=pb.ORIGIN_SYNTHETIC,
            ),
            query=f"{CANARY} Can I drink coconut water? I am on dialysis.",
            actual_response=f"{CANARY} Yes, enjoy.",
            profile=pb.UserProfile(description=f"{CANARY} on dialysis"),
        )
    if type_name == "Intention":
        return _intention(case)
    if type_name == "Interpretation":
        return pb.Interpretation(
            meta=meta(case),
            intention=_intention(case),
            k=1,
            kernel="bm25",
            analysis=f"{CANARY} analysis",
            documents=[
                pb.RetrievedDocument(
                    doc_id="requirement/FR-1",
                    kind="requirement",
                    rank=1,
                    relevant=True,
                    content=CORPUS[1].content,
                )
            ],
        )
    if type_name == "Oracle":
        return pb.Oracle(
            meta=meta(case),
            oracle_id=f"{case}/oracle",
            test_objective=f"{CANARY} objective",
            criteria=[pb.Criterion(criterion_id=f"{case}/c0", index=0, text=f"{CANARY} c")],
        )
    if type_name == "JudgeRequest":
        return _request(case)
    if type_name == "Verdict":
        return pb.Verdict(
            meta=meta(case),
            criterion_id=f"{case}/c0",
            oracle_id=f"{case}/oracle",
            n_criteria=1,
            label=pb.LABEL_YES,
            tier=1,
            criterion=pb.Criterion(criterion_id=f"{case}/c0", text=f"{CANARY} c"),
        )
    if type_name == "Abstain":
        return pb.Abstain(meta=meta(case), request=_request(case), reason="no tier was confident")
    if type_name == "Review":
        return pb.Review(
            meta=meta(case),
            criterion_id=f"{case}/c0",
            label=pb.LABEL_YES,
            reviewer="ann",
            comment=f"{CANARY} fine",
            item=_request(case),
        )
    if type_name == "Threshold":
        return pb.Threshold(app=f"{APP}-{case}", tier=1, has_threshold=True, threshold=0.9)
    raise KeyError(type_name)


# Payloads whose consumers refuse apps without a corpus (the elicitor and the retriever).
APP_CHECKED = frozenset({"Traffic", "Intention"})
REAG_TYPES = (
    "Traffic",
    "Intention",
    "Interpretation",
    "Oracle",
    "JudgeRequest",
    "Verdict",
    "Abstain",
    "Review",
    "Threshold",
)


def _kv(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(string_value=value))


def good_spans(case: str) -> ExportTraceServiceRequest:
    """One LLM span of the fuzz app, as the Collector's Kafka exporter writes it."""
    trace = (case.encode() * 16)[:16]
    messages = [{"role": "user", "parts": [{"type": "text", "content": f"{CANARY} Hi"}]}]
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": f"{CANARY} Hello"}]}]
    span = Span(
        trace_id=trace,
        span_id=b"\x00\xf0g\xaa\x0b\xa9\x02\xb7",
        name="chat",
        start_time_unix_nano=1_700_000_000_000_000_000,
        end_time_unix_nano=1_700_000_002_000_000_000,
        attributes=[
            _kv("gen_ai.operation.name", "chat"),
            _kv("gen_ai.input.messages", json.dumps(messages)),
            _kv("gen_ai.output.messages", json.dumps(answer)),
        ],
    )
    resource = ResourceSpans(scope_spans=[ScopeSpans(spans=[span])])
    resource.resource.attributes.append(_kv("service.name", APP))
    return ExportTraceServiceRequest(resource_spans=[resource])


# --- the consumers -----------------------------------------------------------------


COUNT_NAMES = ("examples", "dead_letters", "good_after", "processed_bad")


@dataclass
class Consumer:
    """One (service, topic) pair, with the router that holds its handler."""

    service: str
    topic: str  # unsuffixed, as in topology.SERVICES
    payload: str  # the message type's name
    router: KafkaRouter
    output: str | None  # where a good event's output goes (None: a side effect only)
    good: Callable[[str], bytes]  # case id -> a good event's bytes
    scrubbed: bool = False  # dead letters keep redacted bytes, not the original ones
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNT_NAMES, 0))
    longest_cpu_s: float = 0.0  # the most CPU seconds one hostile payload's handling took

    @property
    def name(self) -> str:
        return f"{self.service}:{self.topic}"


def _reasoning_script(_messages: Sequence[ChatMessage], _options: dict[str, Any]) -> str:
    return ORACLE_JSON


def _label_script(_prompt: Any, _labels: Sequence[str]) -> dict[str, float]:
    return {"YES": 0.99, "NO": 0.01}


def build_consumers(suffix: str, state: Path) -> list[Consumer]:
    """Every consumer in ``topology.SERVICES``, each on its service's own router.

    ``state`` holds the ledger's and calibrator's SQLite files.
    """
    kafka = KafkaSettings(max_event_bytes=MAX_EVENT_BYTES)
    # No parking: an event of an app with no corpus is dead-lettered at once, as the
    # last step of a park would (services/kit/delivery/offsets.py), so each payload ends here.
    common: dict[str, Any] = {
        "topic_suffix": suffix,
        "kafka": kafka,
        "delivery": DeliverySettings(park_s=0),
    }
    consumers: list[Consumer] = []

    def add(
        service: str,
        topic: str,
        payload: str,
        router: KafkaRouter,
        output: str | None,
        *,
        scrubbed: bool = False,
        good: Callable[[str], bytes] | None = None,
    ) -> None:
        def serialised(case: str) -> bytes:
            return good_event(payload, case).SerializeToString()

        consumers.append(
            Consumer(
                service,
                topic,
                payload,
                router,
                None if output is None else output + suffix,
                good or serialised,
                scrubbed,
            )
        )

    directory = PersonaDirectory(
        lambda app: [d for d in CORPUS if d.app == app and d.kind == "persona"],
        lambda app: app == APP,
    )
    policies = PolicyDirectory(FixedPolicies())
    elicitor = ElicitorSettings(**common)
    add(
        "elicitor",
        TRAFFIC,
        "Traffic",
        elicitor_router(elicitor, directory, policies, ShadowGate(no_spend)),
        INTENTIONS,
        scrubbed=True,
    )
    add(
        "elicitor",
        OTLP_SPANS,
        "ExportTraceServiceRequest",
        build_otlp_router(elicitor, policies),
        TRAFFIC,
        scrubbed=True,
        good=lambda case: good_spans(case).SerializeToString(),
    )
    retriever = Retriever(RetrieverConfig(kernel="bm25", selection="fixed", k=2))
    add(
        "retriever",
        INTENTIONS,
        "Intention",
        retriever_router(
            RetrieverSettings(**common),
            RetrieverDeps(retriever, None, lambda app: [d for d in CORPUS if d.app == app]),
        ),
        INTERPRETATIONS,
    )
    writer = OracleWriter(LLMClient(FakeProvider(chat_script=_reasoning_script)))
    add(
        "oracle",
        INTERPRETATIONS,
        "Interpretation",
        oracle_router(OracleSettings(**common), writer),
        ORACLES,
    )
    for tier in JUDGE_TIER:
        settings = JudgeSettings(tier=tier, annotators=1, tier_annotators="", **common)
        client = LLMClient(FakeProvider(model=f"fake:tier{tier}", label_script=_label_script))
        router = judge_router(settings, build_tier(settings, client, None))
        # No threshold is held, so every tier escalates (the last one abstains).
        onward = JUDGE_TIER[tier + 1] if tier < len(JUDGE_TIER) else ABSTAINS
        add(f"judge-tier{tier}", JUDGE_TIER[tier], "JudgeRequest", router, onward)
        add(f"judge-tier{tier}", THRESHOLDS, "Threshold", router, None)
    ledger_store = LedgerStore.open(f"sqlite:///{state / 'ledger.db'}")
    ledger = ledger_router(LedgerSettings(**common), ledger_store)
    for topic, payload in (
        (ORACLES, "Oracle"),
        (VERDICTS, "Verdict"),
        (ABSTAINS, "Abstain"),
        (REVIEWS, "Review"),
    ):
        add("ledger", topic, payload, ledger, None)
    calibration = CalibrationStore.open(f"sqlite:///{state / 'calibration.db'}")
    add(
        "calibrator",
        REVIEWS,
        "Review",
        calibrator_router(
            calibrator := CalibratorSettings(recalibrate_every=10**9, **common),
            build_recalibrator(calibrator, calibration, ()),
        ),
        None,
    )
    declared = {(s.name, t) for s in SERVICES.values() for t in s.consumes}
    built = {(c.service, c.topic) for c in consumers}
    assert built == declared, f"fuzz consumers differ from topology: {built ^ declared}"
    return consumers


# --- hostile payloads --------------------------------------------------------------


@dataclass(frozen=True)
class Fuzz:
    """One hostile payload: its kind, bytes and headers, and what it must become.

    ``expect`` None: any poison reason (random bytes can be bad in any way);
    ``may_flow``: a protobuf of another type without a type header can parse as a
    valid event of this one (protobuf bytes do not name their type); it must then
    flow like any event, and otherwise become a dead letter.
    """

    kind: str
    value: bytes
    headers: dict[str, str] = field(default_factory=dict)
    expect: frozenset[str] | None = None
    may_flow: bool = False


def _valid(payload: str, value: bytes) -> bool:
    """Whether random bytes happen to be a processable event (then they are no poison)."""
    if payload == "ExportTraceServiceRequest":
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(value)
        except (DecodeError, ValueError):
            return value.lstrip()[:1] == b"{"  # JSON: let the decoder judge, keep it out
        return any(s.spans for r in request.resource_spans for s in r.scope_spans)
    message = getattr(pb, payload)()
    try:
        message.ParseFromString(value)
    except (DecodeError, ValueError):
        return False
    if "meta" in message.DESCRIPTOR.fields_by_name and not (
        message.HasField("meta")
        and message.meta.case_id
        and message.meta.app
        and message.meta.schema_version
    ):
        return False
    required = REQUIRED_FIELDS.get(type(message), ())
    return all(
        message.HasField(f)
        if message.DESCRIPTOR.fields_by_name[f].message_type is not None
        and not message.DESCRIPTOR.fields_by_name[f].is_repeated
        else bool(getattr(message, f))
        for f in required
    )


def _is_map(descriptor: Any) -> bool:
    return bool(descriptor.message_type.GetOptions().map_entry)


def _string_fields(message: Message) -> list[tuple[Message, str]]:
    """Every set, non-empty string field in ``message`` and its sub-messages."""
    found: list[tuple[Message, str]] = []
    for descriptor, value in message.ListFields():
        if descriptor.type == descriptor.TYPE_STRING and not descriptor.is_repeated and value:
            found.append((message, descriptor.name))
        elif descriptor.message_type is not None and not _is_map(descriptor):
            for child in value if descriptor.is_repeated else [value]:
                found += _string_fields(child)
    return found


_case_ids = itertools.count()


def _case() -> str:
    return f"fz-{next(_case_ids)}"


def payloads(payload: str) -> st.SearchStrategy[Fuzz]:
    """Every kind of hostile payload for a topic whose events are ``payload``."""
    otlp = payload == "ExportTraceServiceRequest"

    def good() -> Message:
        return good_spans(_case()) if otlp else good_event(payload, _case())

    random_bytes = (
        st.binary(max_size=600)
        .filter(lambda b: not _valid(payload, b))
        .map(lambda b: Fuzz("random_bytes", b))
    )

    @st.composite
    def huge(draw: st.DrawFn) -> Fuzz:
        event = good()
        target, name = draw(st.sampled_from(_string_fields(event)))
        setattr(target, name, "x" * draw(st.integers(MAX_EVENT_BYTES, 4 * MAX_EVENT_BYTES)))
        return Fuzz("huge_field", event.SerializeToString(), expect=frozenset({"oversized"}))

    @st.composite
    def invalid_utf8(draw: st.DrawFn) -> Fuzz:
        event = good()
        target, name = draw(st.sampled_from(_string_fields(event)))
        bad = draw(st.binary(min_size=1, max_size=40).filter(_not_utf8))
        placeholder = "\x01" * len(bad)
        setattr(target, name, placeholder)
        value = event.SerializeToString().replace(placeholder.encode(), bad, 1)
        return Fuzz("invalid_utf8", value, expect=frozenset({"undecodable"}))

    @st.composite
    def wrong_type(draw: st.DrawFn) -> Fuzz:
        other = draw(st.sampled_from([t for t in REAG_TYPES if t != payload]))
        value = good_event(other, _case()).SerializeToString()
        if draw(st.booleans()):
            return Fuzz("wrong_type", value, {TYPE_HEADER: other}, expect=frozenset({"wrong_type"}))
        return Fuzz("wrong_type_unlabelled", value, may_flow=True)

    kinds = [random_bytes, huge(), invalid_utf8(), wrong_type()]
    if otlp:
        kinds.append(
            st.sampled_from([b"{", b'{"resourceSpans": 7}', b"[]", b'"x"', b"{}"]).map(
                lambda b: Fuzz("bad_json", b)
            )
        )
        return st.one_of(kinds)

    @st.composite
    def wrong_version(draw: st.DrawFn) -> Fuzz:
        event = good()
        event.meta.schema_version = draw(st.integers(2, 2**32 - 1))  # type: ignore[attr-defined]
        return Fuzz(
            "schema_version",
            event.SerializeToString(),
            expect=frozenset({"unknown_schema_version"}),
        )

    required = ["meta", "meta.case_id", "meta.app", "meta.schema_version"]
    if payload == "Threshold":
        required = []
    required += list(REQUIRED_FIELDS.get(getattr(pb, payload), ()))

    @st.composite
    def missing(draw: st.DrawFn) -> Fuzz:
        event = good()
        for path in draw(st.lists(st.sampled_from(required), min_size=1, unique=True)):
            holder, _, name = path.rpartition(".")
            target = event.meta if holder else event  # type: ignore[attr-defined]
            target.ClearField(name)
        value = event.SerializeToString()
        return Fuzz("missing_fields", value, expect=frozenset({"missing_field"}))

    @st.composite
    def unknown_app(draw: st.DrawFn) -> Fuzz:
        event = good()
        event.meta.app = draw(st.text(min_size=1, max_size=2000).filter(lambda a: a != APP))  # type: ignore[attr-defined]
        return Fuzz("unknown_app", event.SerializeToString(), expect=frozenset({"app_not_loaded"}))

    kinds.append(missing())
    if payload in APP_CHECKED:
        kinds.append(unknown_app())
    if payload != "Threshold":  # a Threshold carries no EventMeta, so no schema version
        kinds.append(wrong_version())
    return st.one_of(kinds)


def _not_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False
