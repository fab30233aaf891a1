"""Zero-code capture: LLM spans from OpenTelemetry turned into ``reag.v1.Traffic`` events.

An app that is already traced needs no reag code: the OpenTelemetry Collector's
Kafka exporter writes its spans to ``otlp_spans`` (the exporter's default topic
for traces) and the elicitor's OTLP handler converts them here. Both of the
exporter's OTLP encodings are read: ``otlp_proto``, a serialized
``ExportTraceServiceRequest`` (the exporter's default), and ``otlp_json``, the
OTLP/JSON form of the same message. The encoding is told by the first byte
(``{`` is JSON; a serialized request starts with the tag of field 1, ``0x0a``)
unless the caller names it.

Which spans are LLM spans, and what the query and the response are, is read
from the attributes of three conventions, first match wins:

1. OpenTelemetry GenAI (current): ``gen_ai.input.messages`` and
   ``gen_ai.output.messages``, message lists ``[{role, parts: [{type: text,
   content}]}]`` as a JSON string or a structured value.
2. OpenLLMetry (and the GenAI conventions before 1.37): indexed
   ``gen_ai.prompt.{i}.role/content`` and ``gen_ai.completion.{i}.role/content``.
3. OpenInference: ``llm.input_messages.{i}.message.role/content`` and
   ``llm.output_messages...`` when present, else ``input.value`` /
   ``output.value``, plain text or JSON (a chat request's ``messages``, a chat
   response's ``choices``, or an object with one obvious text field).

The query is the last user message, the response the last output (assistant)
text. A span is an LLM span when it carries any of these attributes or names a
GenAI operation or system; embeddings, tool executions and OpenInference's
tool, retriever, embedding, reranker, guardrail and evaluator spans are not
(their input is not what the user asked). An LLM span without message content
is skipped as ``no_query``: GenAI instrumentations record content only when
asked (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``).

**One case per trace.** A request to an agent makes many LLM calls, and an
acceptance test judges what the user got, so of a trace's LLM spans that have
both a query and a response the one kept is the root-most (fewest ancestors
among the trace's spans in the message), then the latest to end, then the
highest span id (so the choice is deterministic). The others are skipped as
``superseded``. The rule sees one Kafka message: a trace split over several
messages may give an event per message, all under the same case id (it is
derived from the trace id), which downstream dedup by case id absorbs; the
Collector's ``groupbytrace`` processor before the exporter keeps a trace in one
message.

**Who and which app.** The user id is ``user.id``, else the deprecated
``enduser.id``, on the span, else on the resource. The app is the caller's
override, else the resource attribute ``reag.app``, else ``service.name`` (also
kept as the event's ``target``). The profile is every attribute named
``reag.profile.<name>``, resource first and the span's overriding it:
``reag.profile.persona_hint`` and ``reag.profile.description`` fill those
fields, every other name becomes ``attributes[<name>]``. The other ``user.*``
attributes (``user.email``, ``user.full_name``, ``user.name``, ``user.hash``,
``user.roles``) are not taken: they identify a person and say nothing about the
needs a persona is matched on, so an app names what it means to share as
``reag.profile.*``.

Nothing here redacts, and nothing here logs: raw spans carry PII, so the
caller passes every event through ``reag.traffic.redaction.Redactor`` before it
leaves the process, and skip reasons and error messages name attributes and
reasons, never values. Needs ``opentelemetry-proto`` (the ``services`` extra).
"""

from __future__ import annotations

import base64
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from reag.ids import case_id_for
from reag.traffic.live import attribute_text
from reag.v1 import events_pb2 as pb

Encoding = Literal["otlp_proto", "otlp_json"]
ENCODINGS: tuple[Encoding, ...] = ("otlp_proto", "otlp_json")

PROFILE_PREFIX = "reag.profile."
APP_ATTRIBUTE = "reag.app"
USER_ID_ATTRIBUTES = ("user.id", "enduser.id")

# Why a span gave no event: stable codes, used as metric labels.
SKIP_REASONS = (
    "not_llm",
    "no_trace_id",
    "no_app",
    "no_query",
    "no_response",
    "superseded",
    "too_large",
)

_GENAI_OPERATIONS_NOT_LLM = frozenset({"embeddings", "execute_tool"})
_OPENINFERENCE_KINDS_NOT_LLM = frozenset(
    {"TOOL", "RETRIEVER", "EMBEDDING", "RERANKER", "GUARDRAIL", "EVALUATOR"}
)
_LLM_MARKERS = ("gen_ai.operation.name", "gen_ai.system", "gen_ai.provider.name")
_INDEXED = re.compile(r"^(?P<base>.+)\.(?P<i>\d+)\.(?P<rest>.+)$")
# JSON fields that hold a single text in common request and response shapes (LangChain
# chains, simple wrappers), tried in this order when a value is a JSON object.
_INPUT_FIELDS = ("input", "query", "question", "prompt", "content", "text", "message")
_OUTPUT_FIELDS = ("output", "answer", "response", "result", "content", "text", "message")
# OTLP/JSON spells these ids as hex (the OTLP spec), proto3 JSON expects base64.
_HEX_ID_FIELDS = frozenset(
    {"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"}
)
_HEX = re.compile(r"^[0-9a-fA-F]*$")


class OtlpDecodeError(ValueError):
    """Bytes that are not an ``ExportTraceServiceRequest`` in the encoding named or detected.

    The message names the encoding and the kind of failure, never a value from
    the payload (it ends up in a dead letter's reason and in logs).
    """


@dataclass(frozen=True, slots=True)
class Conversion:
    """What one OTLP message gave: the events (one per trace) and the spans skipped, by reason."""

    events: list[pb.Traffic] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    spans: int = 0


# --- decoding ------------------------------------------------------------------------


def detect_encoding(data: bytes) -> Encoding:
    """``otlp_json`` when the payload starts with ``{`` (after whitespace), else ``otlp_proto``."""
    head = data.lstrip(b" \t\r\n\xef\xbb\xbf")[:1]
    return "otlp_json" if head == b"{" else "otlp_proto"


def _hex_ids_to_base64(node: Any) -> Any:
    """The OTLP/JSON tree with its hex trace and span ids respelled as proto3 JSON's base64."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _HEX_ID_FIELDS and isinstance(value, str) and _HEX.match(value):
                if len(value) % 2:
                    raise OtlpDecodeError(f"OTLP/JSON {key} is not whole bytes of hex")
                out[key] = base64.b64encode(bytes.fromhex(value)).decode("ascii")
            else:
                out[key] = _hex_ids_to_base64(value)
        return out
    if isinstance(node, list):
        return [_hex_ids_to_base64(item) for item in node]
    return node


def parse_request(data: bytes, encoding: Encoding | None = None) -> ExportTraceServiceRequest:
    """The ``ExportTraceServiceRequest`` in ``data``; ``encoding`` None detects it.

    Unknown JSON fields are ignored, as OTLP asks of receivers (a newer producer
    may add fields).
    """
    chosen = encoding or detect_encoding(data)
    request = ExportTraceServiceRequest()
    if chosen == "otlp_proto":
        try:
            request.ParseFromString(data)
        except (DecodeError, ValueError) as exc:
            raise OtlpDecodeError(
                f"not a valid otlp_proto ExportTraceServiceRequest ({type(exc).__name__})"
            ) from exc
        return request
    if chosen != "otlp_json":
        raise OtlpDecodeError(f"unknown OTLP encoding {chosen!r}; one of {', '.join(ENCODINGS)}")
    try:
        tree = json.loads(data.decode("utf-8-sig"))  # a byte-order mark is tolerated
    except UnicodeDecodeError as exc:
        raise OtlpDecodeError("not valid otlp_json: not UTF-8") from exc
    except json.JSONDecodeError as exc:
        # JSONDecodeError's msg is fixed text and a position, never the document.
        raise OtlpDecodeError(
            f"not valid otlp_json: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    if not isinstance(tree, dict):
        raise OtlpDecodeError(f"not valid otlp_json: a JSON {type(tree).__name__}, not an object")
    tree = _hex_ids_to_base64(tree)
    try:
        json_format.ParseDict(tree, request, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError) as exc:
        # ParseError messages may quote values from the payload: only the type is kept.
        raise OtlpDecodeError(
            f"not a valid otlp_json ExportTraceServiceRequest ({type(exc).__name__})"
        ) from exc
    return request


def request_to_json(request: ExportTraceServiceRequest) -> bytes:
    """``request`` as the Collector's ``otlp_json`` encoding writes it (ids in hex).

    The inverse of ``parse_request`` for JSON; tests and tools use it to write
    what the exporter would.
    """
    tree = json_format.MessageToDict(request)

    def to_hex(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                key: base64.b64decode(value).hex()
                if key in _HEX_ID_FIELDS and isinstance(value, str)
                else to_hex(value)
                for key, value in node.items()
            }
        if isinstance(node, list):
            return [to_hex(item) for item in node]
        return node

    return json.dumps(to_hex(tree), separators=(",", ":")).encode()


# --- attributes ----------------------------------------------------------------------


def any_value(value: AnyValue) -> Any:
    """An OTLP ``AnyValue`` as plain Python (str, bool, int, float, bytes, list, dict, None)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind)


def attributes(pairs: Iterable[KeyValue]) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in pairs}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _json(value: Any) -> Any:
    """A JSON string decoded; a structured value as it is; anything else None."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    if isinstance(value, list | dict):
        return value
    return None


def _content_text(content: Any) -> str:
    """The text of a message's content: a string, or a list of parts whose text parts count."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and part.get("type", "text") in ("text", "output_text"):
            text = part.get("content", part.get("text"))
            if isinstance(text, str):
                texts.append(text)
    return "\n".join(t for t in texts if t)


def _message_text(message: Mapping[str, Any]) -> str:
    """GenAI messages carry ``parts``; OpenAI-shaped ones carry ``content``."""
    if "parts" in message:
        return _content_text(message["parts"])
    return _content_text(message.get("content"))


def _last(messages: Sequence[tuple[str, str]], roles: tuple[str, ...] | None) -> str:
    """The last non-empty text whose role is in ``roles`` (None: any role)."""
    for role, text in reversed(messages):
        if text.strip() and (roles is None or role in roles):
            return text
    return ""


def _message_list(value: Any) -> list[tuple[str, str]]:
    decoded = _json(value)
    if isinstance(decoded, dict) and isinstance(decoded.get("messages"), list):
        decoded = decoded["messages"]
    if not isinstance(decoded, list):
        return []
    return [(str(m.get("role", "")), _message_text(m)) for m in decoded if isinstance(m, Mapping)]


def _indexed(attrs: Mapping[str, Any], base: str) -> list[dict[str, Any]]:
    """``base.{i}.<rest>`` attributes grouped by ``i``, in index order."""
    groups: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        match = _INDEXED.match(key)
        if match and match.group("base") == base:
            groups.setdefault(int(match.group("i")), {})[match.group("rest")] = value
    return [groups[i] for i in sorted(groups)]


def _openllmetry_messages(attrs: Mapping[str, Any], base: str) -> list[tuple[str, str]]:
    out = []
    for group in _indexed(attrs, base):
        content = group.get("content")
        # Multimodal prompts are recorded as a JSON list of parts.
        decoded = _json(content) if isinstance(content, str) and content[:1] == "[" else None
        text = _content_text(decoded) if isinstance(decoded, list) else _text(content)
        out.append((_text(group.get("role")), text))
    return out


def _openinference_messages(attrs: Mapping[str, Any], base: str) -> list[tuple[str, str]]:
    out = []
    for group in _indexed(attrs, base):
        text = _text(group.get("message.content"))
        if not text:
            parts = [
                _text(value)
                for key, value in sorted(group.items())
                if key.startswith("message.contents.") and key.endswith("message_content.text")
            ]
            text = "\n".join(p for p in parts if p)
        out.append((_text(group.get("message.role")), text))
    return out


def _choices_text(decoded: Any) -> str:
    """The last choice's text of an OpenAI-shaped chat or completion response."""
    if not (isinstance(decoded, dict) and isinstance(decoded.get("choices"), list)):
        return ""
    texts = []
    for choice in decoded["choices"]:
        if isinstance(choice, Mapping):
            message = choice.get("message")
            texts.append(_message_text(message) if isinstance(message, Mapping) else "")
            texts.append(_text(choice.get("text")))
    return next((t for t in reversed(texts) if t.strip()), "")


def _field_text(decoded: Any, fields: tuple[str, ...]) -> str:
    """A JSON object's obvious text: the first of ``fields`` that holds one, else its only one."""
    if not isinstance(decoded, dict):
        return ""
    for name in fields:
        value = decoded.get(name)
        if isinstance(value, str) and value.strip():
            return value
    strings = [v for v in decoded.values() if isinstance(v, str) and v.strip()]
    return strings[0] if len(strings) == 1 else ""


def _value_text(value: Any, *, want: Literal["query", "response"]) -> str:
    """OpenInference's ``input.value`` / ``output.value``: plain text, or JSON to look into."""
    if not isinstance(value, str) or not value.strip():
        return ""
    decoded = _json(value) if value.lstrip()[:1] in ("{", "[", '"') else None
    if decoded is None:
        return value
    if isinstance(decoded, str):
        return decoded
    if want == "query":
        found = _last(_message_list(decoded), ("user", "human"))
        return found or _field_text(decoded, _INPUT_FIELDS)
    found = _choices_text(decoded) or _last(_message_list(decoded), ("assistant", "ai", "model"))
    return found or _field_text(decoded, _OUTPUT_FIELDS)


# --- one span ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Exchange:
    query: str
    response: str


def is_llm_span(attrs: Mapping[str, Any]) -> bool:
    """Whether the span is one of the conventions' LLM (or agent, or chain) spans."""
    if attrs.get("gen_ai.operation.name") in _GENAI_OPERATIONS_NOT_LLM:
        return False
    if attrs.get("openinference.span.kind") in _OPENINFERENCE_KINDS_NOT_LLM:
        return False
    if any(name in attrs for name in _LLM_MARKERS):
        return True
    if attrs.get("openinference.span.kind") is not None:
        return True
    return any(
        key in ("gen_ai.input.messages", "gen_ai.output.messages", "input.value", "output.value")
        or key.startswith(
            ("gen_ai.prompt.", "gen_ai.completion.", "llm.input_messages.", "llm.output_messages.")
        )
        for key in attrs
    )


def exchange_of(attrs: Mapping[str, Any]) -> _Exchange:
    """The query and response a span records, by the first convention that has them."""
    query = response = ""
    if "gen_ai.input.messages" in attrs or "gen_ai.output.messages" in attrs:
        query = _last(_message_list(attrs.get("gen_ai.input.messages")), ("user",))
        response = _last(_message_list(attrs.get("gen_ai.output.messages")), None)
    if not (query and response) and any(k.startswith("gen_ai.prompt.") for k in attrs):
        query = query or _last(_openllmetry_messages(attrs, "gen_ai.prompt"), ("user",))
        completions = _openllmetry_messages(attrs, "gen_ai.completion")
        response = response or _last(completions, ("assistant", ""))
    if not (query and response):
        query = query or _last(
            _openinference_messages(attrs, "llm.input_messages"), ("user", "human")
        )
        response = response or _last(_openinference_messages(attrs, "llm.output_messages"), None)
    if not (query and response):
        query = query or _value_text(attrs.get("input.value"), want="query")
        response = response or _value_text(attrs.get("output.value"), want="response")
    return _Exchange(query, response)


def _user_id(span_attrs: Mapping[str, Any], resource_attrs: Mapping[str, Any]) -> str:
    for attrs in (span_attrs, resource_attrs):
        for name in USER_ID_ATTRIBUTES:
            text = attribute_text(attrs.get(name))
            if text:
                return text
    return ""


def _profile(
    profile: pb.UserProfile, span_attrs: Mapping[str, Any], resource_attrs: Mapping[str, Any]
) -> None:
    merged = {
        key[len(PROFILE_PREFIX) :]: value
        for attrs in (resource_attrs, span_attrs)
        for key, value in attrs.items()
        if key.startswith(PROFILE_PREFIX) and len(key) > len(PROFILE_PREFIX)
    }
    for name, value in merged.items():
        text = attribute_text(value)
        if text is None:
            continue
        if name == "persona_hint":
            profile.persona_hint = text
        elif name == "description":
            profile.description = text
        else:
            profile.attributes[name] = text


# --- one request ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Candidate:
    span: Span
    attrs: dict[str, Any]
    resource_attrs: dict[str, Any]
    exchange: _Exchange


def _depth(span: Span, by_id: Mapping[bytes, Span]) -> int:
    """Ancestors of ``span`` among the trace's spans in this message (cycles cut)."""
    depth, seen, parent = 0, {span.span_id}, span.parent_span_id
    while parent and parent in by_id and parent not in seen:
        seen.add(parent)
        depth += 1
        parent = by_id[parent].parent_span_id
    return depth


def _to_traffic(chosen: _Candidate, app: str) -> pb.Traffic:
    span = chosen.span
    trace_id = span.trace_id.hex()
    event = pb.Traffic(
        request_id=trace_id,
        query=chosen.exchange.query,
        actual_response=chosen.exchange.response,
        target=_text(chosen.resource_attrs.get("service.name")),
    )
    if span.start_time_unix_nano and span.end_time_unix_nano >= span.start_time_unix_nano:
        event.response_latency_s = (span.end_time_unix_nano - span.start_time_unix_nano) / 1e9
    event.profile.user_id = _user_id(chosen.attrs, chosen.resource_attrs)
    _profile(event.profile, chosen.attrs, chosen.resource_attrs)
    meta = event.meta
    meta.case_id = case_id_for(app, trace_id)
    meta.app = app
    meta.schema_version = pb.SCHEMA_VERSION_1
    meta.origin = pb.ORIGIN_LIVE
    # The span's own time, so a redelivered message gives the same event.
    ended = span.end_time_unix_nano or span.start_time_unix_nano
    if ended:
        meta.created_at.FromNanoseconds(ended)
    else:
        meta.created_at.GetCurrentTime()
    return event


def app_of(resource_attrs: Mapping[str, Any], override: str | None = None) -> str:
    """The reag app of a resource: ``override``, else ``reag.app``, else ``service.name``."""
    return (
        override
        or _text(resource_attrs.get(APP_ATTRIBUTE))
        or _text(resource_attrs.get("service.name"))
    )


def traffic_from_request(
    request: ExportTraceServiceRequest, *, app: str | None = None, max_bytes: int | None = None
) -> Conversion:
    """One ``Traffic`` event per trace that has an LLM span with a query and a response.

    ``max_bytes`` bounds what one message can become, before anything is redacted:
    resource attributes (``reag.profile.*``) are copied into every trace's event, so
    a message within the size limit could otherwise give many events of nearly its
    own size each. Events beyond ``max_bytes`` in all are skipped as ``too_large``.
    """
    skipped: Counter[str] = Counter()
    spans = 0
    by_trace: dict[bytes, list[_Candidate]] = {}
    by_id: dict[bytes, dict[bytes, Span]] = {}
    for resource_spans in request.resource_spans:
        resource_attrs = attributes(resource_spans.resource.attributes)
        resource_app = app_of(resource_attrs, app)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans += 1
                by_id.setdefault(span.trace_id, {})[span.span_id] = span
                attrs = attributes(span.attributes)
                if not is_llm_span(attrs):
                    skipped["not_llm"] += 1
                    continue
                if not span.trace_id.strip(b"\x00"):
                    skipped["no_trace_id"] += 1
                    continue
                if not resource_app:
                    skipped["no_app"] += 1
                    continue
                exchange = exchange_of(attrs)
                if not exchange.query.strip():
                    skipped["no_query"] += 1
                    continue
                if not exchange.response.strip():
                    skipped["no_response"] += 1
                    continue
                by_trace.setdefault(span.trace_id, []).append(
                    _Candidate(span, attrs, resource_attrs, exchange)
                )
    events = []
    for trace_id, candidates in by_trace.items():
        trace_spans = by_id[trace_id]
        chosen = min(
            candidates,
            key=lambda c: (
                _depth(c.span, trace_spans),
                -c.span.end_time_unix_nano,
                bytes(255 - b for b in c.span.span_id),
            ),
        )
        if len(candidates) > 1:
            skipped["superseded"] += len(candidates) - 1
        event = _to_traffic(chosen, app_of(chosen.resource_attrs, app))
        if max_bytes is not None:
            size = event.ByteSize()
            if size > max_bytes:
                skipped["too_large"] += 1
                continue
            max_bytes -= size
        events.append(event)
    return Conversion(events=events, skipped=skipped, spans=spans)


def convert(
    data: bytes,
    *,
    encoding: Encoding | None = None,
    app: str | None = None,
    max_bytes: int | None = None,
) -> Conversion:
    """``parse_request`` then ``traffic_from_request``: the events in one Kafka message's bytes.

    With ``max_bytes``, ``data`` over it is refused (``OtlpDecodeError``) before it is
    parsed, and the events are bounded as ``traffic_from_request`` says.
    """
    if max_bytes is not None and len(data) > max_bytes:
        raise OtlpDecodeError(f"{len(data)} bytes, over the {max_bytes}-byte limit")
    return traffic_from_request(parse_request(data, encoding), app=app, max_bytes=max_bytes)
