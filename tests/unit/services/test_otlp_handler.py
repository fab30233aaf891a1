"""The elicitor's OTLP router under FastStream's TestKafkaBroker: spans in, redacted traffic
out keyed by case id, foreign services counted and dropped, poison dead-lettered redacted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from faststream.kafka import KafkaBroker, KafkaMessage, TestKafkaBroker
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from reag.corpus.model import Document
from reag.corpus.store import CorpusStore
from reag.ids import case_id_for
from reag.metrics import OTLP_SPANS_SKIPPED, OTLP_TRAFFIC
from reag.traffic.otlp import request_to_json
from reag.traffic.policy import FixedPolicies, PolicyDirectory
from reag.v1 import events_pb2 as pb
from services.elicitor.main import create_app
from services.elicitor.otlp import build_otlp_router
from services.elicitor.settings import ElicitorSettings, OtlpSettings
from services.kit.topology import DLQ, OTLP_SPANS, TRAFFIC

SUFFIX = "-otlp-unit"
CANARY = "canary.otlp@example.org"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def kv(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(string_value=value))


def spans_request(service: str, trace: str = TRACE, **attrs: str) -> ExportTraceServiceRequest:
    llm = Span(
        trace_id=bytes.fromhex(trace),
        span_id=bytes.fromhex("00f067aa0ba902b7"),
        name="chat",
        start_time_unix_nano=1_700_000_000_000_000_000,
        end_time_unix_nano=1_700_000_002_000_000_000,
        attributes=[
            kv("gen_ai.operation.name", "chat"),
            kv(
                "gen_ai.input.messages",
                json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": f"I am {CANARY}"}]}]
                ),
            ),
            kv(
                "gen_ai.output.messages",
                json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "Noted."}]}]
                ),
            ),
            *(kv(k.replace("__", "."), v) for k, v in attrs.items()),
        ],
    )
    http = Span(trace_id=bytes.fromhex(trace), span_id=bytes.fromhex("1111111111111111"))
    request = ExportTraceServiceRequest()
    rs = ResourceSpans(scope_spans=[ScopeSpans(spans=[llm, http])])
    rs.resource.attributes.append(kv("service.name", service))
    request.resource_spans.append(rs)
    return request


class Sink:
    def __init__(self, broker: KafkaBroker) -> None:
        self.traffic: list[tuple[bytes, pb.Traffic]] = []
        self.letters: list[pb.DeadLetter] = []

        @broker.subscriber(TRAFFIC + SUFFIX, group_id="sink-traffic")
        async def keep(body: bytes, message: KafkaMessage) -> None:
            record: Any = message.raw_message
            self.traffic.append((record.key, pb.Traffic.FromString(body)))

        @broker.subscriber(DLQ, group_id="sink-dlq")
        async def keep_letter(body: bytes) -> None:
            self.letters.append(pb.DeadLetter.FromString(body))


def run_with(settings: ElicitorSettings, known: set[str] | None = None) -> tuple[KafkaBroker, Sink]:
    router = build_otlp_router(
        settings,
        PolicyDirectory(FixedPolicies()),
        None if known is None else known.__contains__,
    )
    broker = KafkaBroker()
    broker.include_router(router)
    return broker, Sink(broker)


async def test_spans_become_redacted_traffic_keyed_by_case_and_foreign_apps_are_dropped() -> None:
    broker, sink = run_with(ElicitorSettings(topic_suffix=SUFFIX), known={"nutrition"})
    skipped_before = OTLP_SPANS_SKIPPED.labels("unknown_app")._value.get()
    made_before = OTLP_TRAFFIC.labels("nutrition")._value.get()
    ours = spans_request("nutrition", user__id=CANARY, reag__profile__diet="vegan")
    foreign = spans_request("checkout", trace="0af7651916cd43dd8448eb211c80319c")
    async with TestKafkaBroker(broker) as test_broker:
        for message in (ours, foreign):
            await test_broker.publish(message.SerializeToString(), OTLP_SPANS + SUFFIX)

    ((key, event),) = sink.traffic
    assert key == case_id_for("nutrition", TRACE).encode() == event.meta.case_id.encode()
    assert event.meta.origin == pb.ORIGIN_LIVE
    assert event.query == "I am [REDACTED:EMAIL]"
    assert event.profile.user_id.startswith("user-")  # an e-mail as user id is pseudonymised
    assert dict(event.profile.attributes) == {"diet": "vegan"}
    assert CANARY.encode() not in event.SerializeToString()
    assert OTLP_SPANS_SKIPPED.labels("unknown_app")._value.get() == skipped_before + 1
    assert OTLP_TRAFFIC.labels("nutrition")._value.get() == made_before + 1
    assert sink.letters == []


async def test_json_spans_with_the_encoding_setting_and_the_app_override() -> None:
    settings = ElicitorSettings(
        topic_suffix=SUFFIX, otlp=OtlpSettings(encoding="otlp_json", app="nutrition")
    )
    broker, sink = run_with(settings)
    async with TestKafkaBroker(broker) as test_broker:
        await test_broker.publish(request_to_json(spans_request("svc")), OTLP_SPANS + SUFFIX)
    ((_, event),) = sink.traffic
    assert (event.meta.app, event.target, event.request_id) == ("nutrition", "svc", TRACE)


@pytest.mark.parametrize(
    ("value", "error_type"),
    [
        (b"\x0a\xff not spans, from " + CANARY.encode(), "undecodable"),
        (b'{"resourceSpans": [{"user": "' + CANARY.encode() + b'"', "undecodable"),
        (b"", "empty"),
    ],
)
async def test_poison_is_dead_lettered_with_a_reason_and_its_bytes_redacted(
    value: bytes, error_type: str
) -> None:
    broker, sink = run_with(ElicitorSettings(topic_suffix=SUFFIX))
    async with TestKafkaBroker(broker) as test_broker:
        await test_broker.publish(value, OTLP_SPANS + SUFFIX, key=b"poison")
    (letter,) = sink.letters
    assert (letter.service, letter.topic, letter.error_type) == (
        "elicitor",
        OTLP_SPANS + SUFFIX,
        error_type,
    )
    assert letter.reason
    assert CANARY.encode() not in letter.SerializeToString()
    if value:
        assert b"[REDACTED:EMAIL]" in letter.value
    assert sink.traffic == []


def test_the_app_consumes_otlp_spans_unless_switched_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REAG_STORE_DSN", raising=False)
    monkeypatch.setenv("REAG_STATE_DIR", str(tmp_path))
    CorpusStore.open(f"sqlite:///{tmp_path / 'reag.db'}").add(
        "demo",
        [
            Document(
                app="demo", kind="requirement", local_id="R", title="t", content="c", source="s"
            )
        ],
    )

    def topics() -> set[str]:
        broker = create_app(ElicitorSettings()).broker
        assert broker is not None
        return {t for s in broker.subscribers for t in getattr(s, "topic_names", ())}

    assert topics() == {TRAFFIC, OTLP_SPANS}
    monkeypatch.setenv("REAG_OTLP__ENABLED", "false")
    assert topics() == {TRAFFIC}
