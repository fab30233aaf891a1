"""Every LLM call is one GenAI span under the current span; no content unless enabled."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from reag.llm.accounting import Caller, CostLedger
from reag.llm.base import InvalidRequestError, Message
from reag.llm.client import LLMClient
from reag.llm.scripted import FakeProvider
from reag.llm.settings import LLMSettings
from reag.llm.tracing import TRACER_NAME, WITHHELD, withhold_profiles
from reag.untrusted import fence
from tests.spans import global_spans

QUERY = "Can I drink coconut water with my kidney disease?"
PROFILE = "On dialysis three times a week, potassium restricted."
MESSAGES = [
    Message("system", "Judge the response."),
    Message(
        "user",
        f"{fence('untrusted_persona', PROFILE)}\n{fence('untrusted_query', QUERY)}\nAnswer.",
    ),
]


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    _, exporter = global_spans()
    exporter.clear()
    yield exporter
    exporter.clear()


def _client(settings: LLMSettings | None = None, **scripts: Any) -> LLMClient:
    return LLMClient(
        FakeProvider(model="fake:judge-model", **scripts),
        Caller("judge", "2"),
        settings=settings or LLMSettings(max_retries=0),
        ledger=CostLedger(),
    )


def _llm_spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [
        s
        for s in exporter.get_finished_spans()
        if s.instrumentation_scope is not None and s.instrumentation_scope.name == TRACER_NAME
    ]


def _text(span: ReadableSpan) -> str:
    return repr(
        (span.name, dict(span.attributes or {}), [dict(e.attributes or {}) for e in span.events])
    )


async def test_a_chat_is_one_client_span_with_the_genai_attributes_under_the_current_span(
    spans: InMemorySpanExporter,
) -> None:
    client = _client()
    with trace.get_tracer("test").start_as_current_span("oracles process") as parent:
        result = await client.chat(MESSAGES, temperature=0.2, max_tokens=64)
    (span,) = _llm_spans(spans)
    assert span.name == "chat judge-model"
    assert span.kind is SpanKind.CLIENT
    assert span.parent is not None
    assert span.parent.span_id == parent.get_span_context().span_id
    assert span.context.trace_id == parent.get_span_context().trace_id
    attributes = dict(span.attributes or {})
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == attributes["gen_ai.system"] == "fake"
    assert attributes["gen_ai.request.model"] == "judge-model"
    assert attributes["gen_ai.request.temperature"] == 0.2
    assert attributes["gen_ai.request.max_tokens"] == 64
    assert attributes["gen_ai.usage.input_tokens"] == result.usage.prompt_tokens > 0
    assert attributes["gen_ai.usage.output_tokens"] == result.usage.completion_tokens > 0
    assert attributes["reag.service"] == "judge"
    assert attributes["reag.tier"] == "2"
    assert "gen_ai.input.messages" not in attributes
    assert "gen_ai.output.messages" not in attributes
    assert "coconut" not in _text(span)
    assert "dialysis" not in _text(span)


async def test_label_probabilities_from_a_raw_prompt_are_a_text_completion(
    spans: InMemorySpanExporter,
) -> None:
    await _client().label_probs("Is it safe? Answer YES or NO:", ["YES", "NO"])
    await _client().label_probs(MESSAGES, ["YES", "NO"])
    operations = [dict(s.attributes or {})["gen_ai.operation.name"] for s in _llm_spans(spans)]
    assert operations == ["text_completion", "chat"]


async def test_content_is_recorded_only_when_enabled_and_never_a_profile(
    spans: InMemorySpanExporter,
) -> None:
    def echo(messages: Sequence[Message], _options: dict[str, Any]) -> str:
        return f"You said: {messages[-1].content}"

    settings = LLMSettings(max_retries=0, trace_content=True)
    await _client(settings, chat_script=echo).chat(MESSAGES)
    (span,) = _llm_spans(spans)
    attributes = dict(span.attributes or {})
    assert QUERY in str(attributes["gen_ai.input.messages"])
    assert QUERY in str(attributes["gen_ai.output.messages"])
    assert WITHHELD in str(attributes["gen_ai.input.messages"])
    assert WITHHELD in str(attributes["gen_ai.output.messages"])
    assert "dialysis" not in _text(span)


async def test_a_failed_call_is_an_error_span_naming_the_type_not_the_message(
    spans: InMemorySpanExporter,
) -> None:
    def refuse(_messages: Sequence[Message], _options: dict[str, Any]) -> str:
        raise InvalidRequestError(f"prompt too long: {QUERY}")

    with pytest.raises(InvalidRequestError):
        await _client(chat_script=refuse).chat(MESSAGES)
    (span,) = _llm_spans(spans)
    assert span.status.status_code is StatusCode.ERROR
    assert dict(span.attributes or {})["error.type"] == "InvalidRequestError"
    assert "coconut" not in _text(span)
    assert not span.events


def test_withholding_covers_every_profile_fence_and_keeps_the_rest() -> None:
    text = "\n".join(
        [
            fence("untrusted_persona", PROFILE),
            fence("untrusted_persona_documents", "Persona: dialysis patients."),
            fence("untrusted_user_profile", PROFILE, attributes={"kind": "x"}),
            fence("untrusted_query", QUERY),
        ]
    )
    kept = withhold_profiles(text)
    assert "dialysis" not in kept
    assert kept.count(WITHHELD) == 3
    assert QUERY in kept
