"""OTLP spans to Traffic events: both encodings, the three attribute conventions, one case
per trace, who the user is, and what is skipped and why.

Every input is a real ``ExportTraceServiceRequest`` from opentelemetry-proto, serialized
as the Collector's Kafka exporter writes it (``otlp_proto``) or as OTLP/JSON with hex
ids (``otlp_json``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from bench.redaction import MIB, PATHOLOGICAL
from reag.ids import case_id_for
from reag.traffic.otlp import (
    SKIP_REASONS,
    Conversion,
    OtlpDecodeError,
    convert,
    detect_encoding,
    parse_request,
    request_to_json,
    traffic_from_request,
)
from reag.traffic.redaction import Redactor
from reag.v1 import events_pb2 as pb
from tests.cpu_bound import within_cpu

TRACE = "5b8efff798038103d269b633813fc60c"
OTHER_TRACE = "0af7651916cd43dd8448eb211c80319c"
QUERY = "Can I eat grapefruit with my statins?"
ANSWER = "Grapefruit can raise statin levels; ask your pharmacist first."
T0 = 1_700_000_000_000_000_000


def value(v: Any) -> AnyValue:
    """A Python value as an OTLP AnyValue (lists and dicts become array and kvlist values)."""
    if isinstance(v, bool):
        return AnyValue(bool_value=v)
    if isinstance(v, int):
        return AnyValue(int_value=v)
    if isinstance(v, float):
        return AnyValue(double_value=v)
    if isinstance(v, list):
        return AnyValue(array_value=ArrayValue(values=[value(x) for x in v]))
    if isinstance(v, dict):
        return AnyValue(kvlist_value=KeyValueList(values=kvs(v)))
    return AnyValue(string_value=v)


def kvs(attrs: Mapping[str, Any]) -> list[KeyValue]:
    return [KeyValue(key=k, value=value(v)) for k, v in attrs.items()]


def span(
    attrs: Mapping[str, Any],
    *,
    trace: str = TRACE,
    span_id: str = "00f067aa0ba902b7",
    parent: str = "",
    start: int = T0,
    end: int = T0 + 1_500_000_000,
    name: str = "chat gpt-4.1-mini",
) -> Span:
    return Span(
        trace_id=bytes.fromhex(trace),
        span_id=bytes.fromhex(span_id),
        parent_span_id=bytes.fromhex(parent),
        name=name,
        kind=Span.SPAN_KIND_CLIENT,
        start_time_unix_nano=start,
        end_time_unix_nano=end,
        attributes=kvs(attrs),
    )


def request(*spans: Span, resource: Mapping[str, Any] | None = None) -> ExportTraceServiceRequest:
    attrs = {"service.name": "nutrition"} if resource is None else resource
    out = ExportTraceServiceRequest()
    rs = ResourceSpans(scope_spans=[ScopeSpans(spans=list(spans))])
    rs.resource.attributes.extend(kvs(attrs))
    out.resource_spans.append(rs)
    return out


def genai(
    query: str = QUERY, answer: str = ANSWER, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Attributes of a span under the current GenAI conventions (messages as JSON strings)."""
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.input.messages": json.dumps(
            [
                {"role": "system", "parts": [{"type": "text", "content": "Be careful."}]},
                {"role": "user", "parts": [{"type": "text", "content": "Hello"}]},
                {
                    "role": "assistant",
                    "parts": [{"type": "text", "content": "Hi, how can I help?"}],
                },
                {"role": "user", "parts": [{"type": "text", "content": query}]},
            ]
        ),
        "gen_ai.output.messages": json.dumps(
            [
                {
                    "role": "assistant",
                    "parts": [{"type": "text", "content": answer}],
                    "finish_reason": "stop",
                }
            ]
        ),
        **(extra or {}),
    }


def one(conversion: Conversion) -> pb.Traffic:
    assert len(conversion.events) == 1, conversion
    return conversion.events[0]


# --- encodings -------------------------------------------------------------------------


def test_otlp_proto_bytes_give_a_live_traffic_event() -> None:
    data = request(span(genai())).SerializeToString()
    assert detect_encoding(data) == "otlp_proto"

    event = one(convert(data))

    assert event.query == QUERY
    assert event.actual_response == ANSWER
    assert event.request_id == TRACE
    assert event.meta.case_id == case_id_for("nutrition", TRACE)
    assert event.meta.app == "nutrition"
    assert event.meta.origin == pb.ORIGIN_LIVE
    assert event.meta.schema_version == pb.SCHEMA_VERSION_1
    assert event.meta.created_at.ToNanoseconds() == T0 + 1_500_000_000
    assert event.response_latency_s == pytest.approx(1.5)
    assert event.target == "nutrition"


def test_otlp_json_with_hex_ids_gives_the_same_event_as_protobuf() -> None:
    message = request(
        span(genai(), parent="1111111111111111"), span({}, span_id="1111111111111111")
    )
    data = request_to_json(message)
    tree = json.loads(data)
    # What the Collector writes: hex ids, not proto3 JSON's base64.
    spans = tree["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert spans[0]["traceId"] == TRACE
    assert spans[0]["parentSpanId"] == "1111111111111111"
    assert detect_encoding(data) == "otlp_json"

    assert parse_request(data) == message
    assert convert(data).events == convert(message.SerializeToString()).events
    assert one(convert(data)).request_id == TRACE


def test_hand_written_otlp_json_with_unknown_fields_and_int_enums_parses() -> None:
    data = json.dumps(
        {
            "resourceSpans": [
                {
                    "resource": {
                        "attributes": [
                            {"key": "service.name", "value": {"stringValue": "nutrition"}}
                        ]
                    },
                    "scopeSpans": [
                        {
                            "scope": {"name": "openinference.instrumentation.openai"},
                            "spans": [
                                {
                                    "traceId": TRACE,
                                    "spanId": "00f067aa0ba902b7",
                                    "name": "ChatCompletion",
                                    "kind": 3,
                                    "startTimeUnixNano": str(T0),
                                    "endTimeUnixNano": str(T0 + 10**9),
                                    "attributes": [
                                        {"key": "input.value", "value": {"stringValue": QUERY}},
                                        {"key": "output.value", "value": {"stringValue": ANSWER}},
                                    ],
                                    "aFieldFromTheFuture": {"x": 1},
                                }
                            ],
                        }
                    ],
                }
            ]
        },
        indent=2,
    ).encode()

    event = one(convert(b"\n  " + data))
    assert one(convert(b"\xef\xbb\xbf" + data)) == event

    assert (event.query, event.actual_response, event.request_id) == (QUERY, ANSWER, TRACE)


def test_an_explicit_encoding_hint_overrides_detection() -> None:
    data = request_to_json(request(span(genai())))
    assert one(convert(data, encoding="otlp_json")).query == QUERY
    with pytest.raises(OtlpDecodeError, match="otlp_proto"):
        convert(data, encoding="otlp_proto")


@pytest.mark.parametrize(
    ("data", "encoding", "says"),
    [
        (b"\xff\xfe jane@example.com is not protobuf", None, "otlp_proto"),
        (b'{"resourceSpans": [ jane@example.com', None, "otlp_json: Expecting value"),
        (b'{"resourceSpans": {"x": "jane@example.com"}}', None, "otlp_json"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "abc"}]}]}]}', None, "hex"),
        (b"[1, 2]", "otlp_json", "a JSON list"),
    ],
)
def test_bad_bytes_raise_an_error_that_names_the_encoding_not_the_payload(
    data: bytes, encoding: Any, says: str
) -> None:
    with pytest.raises(OtlpDecodeError, match=says) as caught:
        convert(data, encoding=encoding)
    assert "jane" not in str(caught.value)


# --- the three attribute conventions ---------------------------------------------------


def test_genai_messages_as_structured_values_are_read_too() -> None:
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": [{"role": "user", "parts": [{"type": "text", "content": QUERY}]}],
        "gen_ai.output.messages": [
            {
                "role": "assistant",
                "parts": [
                    {"type": "reasoning", "content": "thinking about statins"},
                    {"type": "text", "content": ANSWER},
                ],
            }
        ],
    }
    event = one(convert(request(span(attrs)).SerializeToString()))
    assert (event.query, event.actual_response) == (QUERY, ANSWER)


def test_genai_query_is_the_last_user_message_of_a_conversation() -> None:
    event = one(convert(request(span(genai())).SerializeToString()))
    assert event.query == QUERY  # not "Hello", the first user turn


def test_openllmetry_indexed_prompt_and_completion_attributes() -> None:
    attrs = {
        "gen_ai.system": "openai",
        "gen_ai.prompt.0.role": "system",
        "gen_ai.prompt.0.content": "Be careful.",
        "gen_ai.prompt.1.role": "user",
        "gen_ai.prompt.1.content": "Hello",
        "gen_ai.prompt.2.role": "assistant",
        "gen_ai.prompt.2.content": "Hi!",
        "gen_ai.prompt.10.role": "user",  # indices are numbers, not strings: 10 is the last
        "gen_ai.prompt.10.content": QUERY,
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.content": ANSWER,
        "gen_ai.completion.0.finish_reason": "stop",
    }
    event = one(convert(request(span(attrs)).SerializeToString()))
    assert (event.query, event.actual_response) == (QUERY, ANSWER)


def test_openllmetry_multimodal_content_keeps_the_text_parts() -> None:
    attrs = {
        "gen_ai.prompt.0.role": "user",
        "gen_ai.prompt.0.content": json.dumps(
            [{"type": "text", "text": QUERY}, {"type": "image_url", "image_url": {"url": "x"}}]
        ),
        "gen_ai.completion.0.content": ANSWER,
    }
    event = one(convert(request(span(attrs)).SerializeToString()))
    assert (event.query, event.actual_response) == (QUERY, ANSWER)


def test_openinference_plain_input_and_output_values() -> None:
    attrs = {
        "openinference.span.kind": "CHAIN",
        "input.value": QUERY,
        "input.mime_type": "text/plain",
        "output.value": ANSWER,
    }
    event = one(convert(request(span(attrs)).SerializeToString()))
    assert (event.query, event.actual_response) == (QUERY, ANSWER)


def test_openinference_json_values_with_messages_and_choices() -> None:
    attrs = {
        "openinference.span.kind": "LLM",
        "input.mime_type": "application/json",
        "input.value": json.dumps(
            {
                "model": "gpt-4.1-mini",
                "messages": [
                    {"role": "system", "content": "Be careful."},
                    {"role": "user", "content": [{"type": "text", "text": QUERY}]},
                ],
            }
        ),
        "output.mime_type": "application/json",
        "output.value": json.dumps(
            {"choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER}}]}
        ),
    }
    event = one(convert(request(span(attrs)).SerializeToString()))
    assert (event.query, event.actual_response) == (QUERY, ANSWER)


def test_openinference_json_object_with_one_text_field() -> None:
    attrs = {
        "openinference.span.kind": "CHAIN",
        "input.value": json.dumps({"question": QUERY, "k": 3}),
        "output.value": json.dumps({"answer": ANSWER, "sources": ["a", "b"]}),
    }
    event = one(convert(request(span(attrs)).SerializeToString()))
    assert (event.query, event.actual_response) == (QUERY, ANSWER)


def test_openinference_indexed_llm_messages_win_over_the_raw_request() -> None:
    attrs = {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": "Be careful.",
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": QUERY,
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": ANSWER,
        "input.value": json.dumps({"messages": [{"role": "user", "content": "raw"}]}),
        "output.value": "raw",
    }
    event = one(convert(request(span(attrs)).SerializeToString()))
    assert (event.query, event.actual_response) == (QUERY, ANSWER)


# --- who asked, which app, the profile -------------------------------------------------


@pytest.mark.parametrize(
    ("span_attrs", "resource_attrs", "user"),
    [
        ({"user.id": "u-span"}, {"user.id": "u-res"}, "u-span"),
        ({"enduser.id": "u-old"}, {}, "u-old"),
        ({"user.id": "u-new", "enduser.id": "u-old"}, {}, "u-new"),
        ({}, {"user.id": "u-res"}, "u-res"),
        ({}, {"enduser.id": "u-res-old"}, "u-res-old"),
        ({"enduser.id": "u-span-old"}, {"user.id": "u-res"}, "u-span-old"),
        ({}, {}, ""),
    ],
)
def test_user_id_from_span_then_resource(
    span_attrs: dict[str, str], resource_attrs: dict[str, str], user: str
) -> None:
    message = request(
        span(genai(extra=span_attrs)), resource={"service.name": "nutrition", **resource_attrs}
    )
    assert one(convert(message.SerializeToString())).profile.user_id == user


def test_app_from_reag_app_then_service_name_then_the_override() -> None:
    by_service = request(span(genai()), resource={"service.name": "diet-bot"})
    by_attribute = request(
        span(genai()), resource={"service.name": "diet-bot", "reag.app": "nutrition"}
    )
    assert one(traffic_from_request(by_service)).meta.app == "diet-bot"
    event = one(traffic_from_request(by_attribute))
    assert (event.meta.app, event.target) == ("nutrition", "diet-bot")
    assert event.meta.case_id == case_id_for("nutrition", TRACE)
    overridden = one(traffic_from_request(by_attribute, app="other"))
    assert overridden.meta.app == "other"
    assert overridden.meta.case_id == case_id_for("other", TRACE)


def test_a_span_without_any_app_is_skipped() -> None:
    conversion = traffic_from_request(request(span(genai()), resource={}))
    assert conversion.events == []
    assert conversion.skipped == {"no_app": 1}
    assert one(traffic_from_request(request(span(genai()), resource={}), app="x")).meta.app == "x"


def test_profile_from_reag_profile_attributes_span_over_resource() -> None:
    message = request(
        span(
            genai(
                extra={
                    "reag.profile.diet": "vegan",
                    "reag.profile.ckd_stage": 3,
                    "reag.profile.persona_hint": "ckd",
                    "user.email": "jane@example.com",
                    "user.full_name": "Jane Doe",
                }
            )
        ),
        resource={
            "service.name": "nutrition",
            "reag.profile.diet": "omnivore",
            "reag.profile.description": "On dialysis three times a week.",
            "reag.profile.allergies": ["nuts", "shellfish"],
        },
    )
    profile = one(convert(message.SerializeToString())).profile
    assert dict(profile.attributes) == {
        "diet": "vegan",
        "ckd_stage": "3",
        "allergies": '["nuts","shellfish"]',
    }
    assert profile.persona_hint == "ckd"
    assert profile.description == "On dialysis three times a week."
    # Identity attributes are not a profile: they are never taken.
    assert "Jane" not in str(profile)
    assert "jane@example.com" not in str(profile)


# --- one case per trace, and what is skipped -------------------------------------------


def test_one_case_per_trace_the_root_most_llm_span_wins() -> None:
    root = span(
        {"openinference.span.kind": "AGENT", "input.value": QUERY, "output.value": ANSWER},
        span_id="aaaaaaaaaaaaaaaa",
        end=T0 + 9 * 10**9,
    )
    inner = [
        span(
            genai(f"step {i}", f"partial {i}"),
            span_id=f"bbbbbbbbbbbbbbb{i}",
            parent="aaaaaaaaaaaaaaaa",
            end=T0 + (10 + i) * 10**9,  # later than the root, but deeper
        )
        for i in range(3)
    ]
    http = span({"http.route": "/chat"}, span_id="cccccccccccccccc")
    conversion = convert(request(*inner, root, http).SerializeToString())

    event = one(conversion)
    assert (event.query, event.actual_response) == (QUERY, ANSWER)
    assert conversion.skipped == {"superseded": 3, "not_llm": 1}
    assert conversion.spans == 5


def test_among_siblings_the_latest_to_end_wins_and_the_choice_is_stable() -> None:
    first = span(genai("first", "first answer"), span_id="1000000000000001", end=T0 + 10**9)
    last = span(genai("second", "second answer"), span_id="1000000000000002", end=T0 + 2 * 10**9)
    tie = span(genai("tie", "tie answer"), span_id="1000000000000003", end=T0 + 2 * 10**9)
    for order in ([first, last], [last, first]):
        assert one(convert(request(*order).SerializeToString())).query == "second"
    for order in ([last, tie], [tie, last]):
        assert one(convert(request(*order).SerializeToString())).query == "tie"


def test_a_deep_span_with_both_beats_a_root_span_without_a_response() -> None:
    root = span(
        {"openinference.span.kind": "AGENT", "input.value": QUERY}, span_id="aaaaaaaaaaaaaaaa"
    )
    child = span(genai(), span_id="bbbbbbbbbbbbbbbb", parent="aaaaaaaaaaaaaaaa")
    conversion = convert(request(root, child).SerializeToString())
    assert one(conversion).actual_response == ANSWER
    assert conversion.skipped == {"no_response": 1}


def test_two_traces_in_one_message_give_two_cases() -> None:
    message = request(span(genai("q1", "a1")), span(genai("q2", "a2"), trace=OTHER_TRACE))
    events = convert(message.SerializeToString()).events
    assert sorted((e.request_id, e.query) for e in events) == [(OTHER_TRACE, "q2"), (TRACE, "q1")]
    assert len({e.meta.case_id for e in events}) == 2


def test_the_same_trace_gives_the_same_case_every_time() -> None:
    data = request(span(genai())).SerializeToString()
    assert convert(data).events == convert(data).events


def test_non_llm_spans_and_llm_spans_without_content_are_counted_by_reason() -> None:
    spans = [
        span({"http.method": "GET", "http.route": "/health"}, span_id="0000000000000001"),
        span({"db.system": "postgresql"}, span_id="0000000000000002"),
        # Content capture off (the GenAI instrumentations' default): no messages at all.
        span(
            {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4.1-mini"},
            span_id="0000000000000003",
        ),
        span(genai(answer=""), span_id="0000000000000004"),
        span(
            {"gen_ai.operation.name": "embeddings", "input.value": "x"}, span_id="0000000000000005"
        ),
        span(
            {"openinference.span.kind": "RETRIEVER", "input.value": QUERY, "output.value": "doc"},
            span_id="0000000000000006",
        ),
        span(
            {"gen_ai.operation.name": "chat", "gen_ai.output.messages": "[]"},
            span_id="0000000000000007",
        ),
    ]
    conversion = convert(request(*spans).SerializeToString())
    assert conversion.events == []
    assert conversion.skipped == {"not_llm": 4, "no_query": 2, "no_response": 1}
    assert set(conversion.skipped) <= set(SKIP_REASONS)
    assert conversion.spans == 7


def test_skip_reasons_carry_no_content() -> None:
    secret = "jane@example.com"
    spans = [span(genai(query=secret, answer=""), span_id="0000000000000001")]
    conversion = convert(request(*spans).SerializeToString())
    assert secret not in repr(conversion)


def test_an_empty_request_gives_nothing() -> None:
    conversion = convert(ExportTraceServiceRequest().SerializeToString())
    assert (conversion.events, dict(conversion.skipped), conversion.spans) == ([], {}, 0)


def test_events_redact_like_any_traffic() -> None:
    message = request(span(genai("Email me at jane@example.com", extra={"user.id": "jane@x.org"})))
    redacted, counts = Redactor().traffic(one(convert(message.SerializeToString())))
    assert "jane" not in redacted.query
    assert redacted.profile.user_id.startswith("user-")
    assert counts["EMAIL"] == 1


# --- hostile input (issue 23) ---------------------------------------------------------------


def _amplifying(traces: int, profile_bytes: int) -> bytes:
    """One message whose resource profile is copied into each of ``traces`` events."""
    spans = [span(genai(), trace=f"{i + 1:032x}", span_id=f"{i + 1:016x}") for i in range(traces)]
    resource = {"service.name": "nutrition", "reag.profile.note": "a" * profile_bytes + "@"}
    return request(*spans, resource=resource).SerializeToString()


def test_a_message_cannot_become_more_event_bytes_than_the_limit() -> None:
    data = _amplifying(traces=50, profile_bytes=20_000)
    conversion = convert(data, max_bytes=len(data))
    assert sum(event.ByteSize() for event in conversion.events) <= len(data)
    assert conversion.skipped["too_large"] == 50 - len(conversion.events)
    assert conversion.skipped["too_large"] > 0


def test_a_message_over_the_limit_is_refused_before_parsing() -> None:
    with pytest.raises(OtlpDecodeError, match="over the 100-byte limit"):
        convert(b"{" + b" " * 200 + b"}", max_bytes=100)


@pytest.mark.parametrize("family", ["email", "card_spaced", "invisible"])
def test_a_mib_of_pathological_spans_converts_and_redacts_in_bounded_cpu(family: str) -> None:
    text = PATHOLOGICAL[family](MIB // 2)
    spans = [span(genai(query=text, answer=text))]
    data = request(*spans, resource={"service.name": "nutrition"}).SerializeToString()
    redactor = Redactor()
    with within_cpu(f"OTLP of 1 MiB of {family}"):
        for event in convert(data, max_bytes=2 * MIB).events:
            redactor.traffic(event)
