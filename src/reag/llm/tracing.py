"""A span per LLM call, with the OpenTelemetry GenAI semantic conventions' attributes.

Why here: ``LLMClient._run`` is the one path every model call takes (every
stage, every tier, every provider), so one span there covers them all, and
it starts inside whatever span is current — in a service, the Kafka consume
span FastStream opened for the event — so a case's LLM calls sit in the
case's trace beside its topic hops. The core depends on the OpenTelemetry
API only: with no SDK configured the spans are no-ops.

Attributes follow the GenAI conventions (``gen_ai.operation.name``,
``gen_ai.provider.name`` and its older name ``gen_ai.system``,
``gen_ai.request.model``, ``gen_ai.usage.input_tokens`` /
``output_tokens``), plus ``reag.*`` ones for who paid and what it cost.
No prompt or completion text is recorded unless ``REAG_LLM_TRACE_CONTENT``
is set; even then the contents of every fence that holds a user's profile
(persona, profile) are withheld, so profile data never reaches a span.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from reag.llm.accounting import Caller
from reag.llm.base import ChatResult, Message, Usage
from reag.untrusted import PREFIX

TRACER_NAME = "reag.llm"
WITHHELD = "[withheld: profile data]"

# reag's model prefix -> the conventions' provider name (well-known values where one exists).
PROVIDER_NAMES = {"openai": "openai", "gemini": "gcp.gemini", "local": "llama_cpp"}
# reag's kinds of call -> gen_ai.operation.name; a label probability from a message list
# is a chat, from a raw string a completion, as is scoring a continuation.
_OPERATIONS = {"chat": "chat", "label_probs": "chat", "score": "text_completion"}

# A fence of ours whose tag names a profile: its whole contents are withheld.
_PROFILE_FENCE = re.compile(
    rf"(<({PREFIX}_[a-z0-9_]*(?:persona|profile)[a-z0-9_]*)(?:\s[^>]*)?>)(.*?)(</\2>)", re.S
)

Prompt = str | Sequence[Message]

# A proxy until a service configures its provider; it follows the global one from then on.
_TRACER = trace.get_tracer(TRACER_NAME)


def withhold_profiles(text: str) -> str:
    """``text`` with the contents of every persona or profile fence replaced."""
    return _PROFILE_FENCE.sub(lambda m: f"{m.group(1)}{WITHHELD}{m.group(4)}", text)


def _split_model(model: str) -> tuple[str, str]:
    provider, sep, name = model.partition(":")
    return (provider, name) if sep else ("", model)


def _messages_json(messages: Sequence[tuple[str, str]]) -> str:
    """The conventions' message list (role, text parts), profile fences withheld."""
    return json.dumps(
        [
            {"role": role, "parts": [{"type": "text", "content": withhold_profiles(text)}]}
            for role, text in messages
        ],
        ensure_ascii=False,
    )


def _prompt_messages(prompt: Prompt) -> list[tuple[str, str]]:
    if isinstance(prompt, str):
        return [("user", prompt)]
    return [(m.role, m.content) for m in prompt]


def _usage(result: object) -> tuple[Usage, int]:
    """Tokens and calls of a result, or of a batch of them."""
    parts = result if isinstance(result, list) else [result]
    usage, calls = Usage(), 0
    for part in parts:
        usage = usage + getattr(part, "usage", Usage())
        calls += int(getattr(part, "n_calls", 1))
    return usage, calls


class LLMSpan:
    """The open span of one call; the client reports its outcome through it."""

    def __init__(self, span: Span, *, content: bool) -> None:
        self.span = span
        self._content = content

    def retried(self, error: BaseException) -> None:
        self.span.add_event("retry", {"error.type": type(error).__name__})

    def finished(self, result: object, price: Callable[[Usage], float]) -> None:
        """Records the call's tokens and cost (priced here: providers leave cost at 0)."""
        usage, calls = _usage(result)
        self.span.set_attribute("gen_ai.usage.input_tokens", usage.prompt_tokens)
        self.span.set_attribute("gen_ai.usage.output_tokens", usage.completion_tokens)
        if usage.cached_tokens:
            self.span.set_attribute("reag.llm.cached_input_tokens", usage.cached_tokens)
        self.span.set_attribute("reag.llm.calls", calls)
        self.span.set_attribute("reag.llm.cost_usd", price(usage))
        parts = result if isinstance(result, list) else [result]
        models = {str(getattr(r, "model", "")) for r in parts}
        if len(models) == 1 and "" not in models:
            self.span.set_attribute("gen_ai.response.model", _split_model(models.pop())[1])
        if self._content and isinstance(result, ChatResult):
            output = _messages_json([("assistant", result.text)])
            self.span.set_attribute("gen_ai.output.messages", output)


@contextmanager
def llm_span(
    model: str,
    kind: str,
    caller: Caller,
    *,
    prompt: Prompt | None = None,
    content: bool = False,
    request: dict[str, Any] | None = None,
) -> Iterator[LLMSpan]:
    """A CLIENT span named ``<operation> <model>`` around one call, ended on exit.

    ``request``: the call's parameters (temperature, max_tokens, ...) recorded as
    ``gen_ai.request.*``; ``content``: record the prompt and the reply (profile
    fences withheld). An exception marks the span an error with ``error.type``.
    """
    provider, name = _split_model(model)
    operation = _OPERATIONS.get(kind, kind)
    if kind == "label_probs" and isinstance(prompt, str):
        operation = "text_completion"
    provider_name = PROVIDER_NAMES.get(provider, provider or "unknown")
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": operation,
        "gen_ai.provider.name": provider_name,
        "gen_ai.system": provider_name,
        "gen_ai.request.model": name,
        "reag.llm.kind": kind,
        "reag.service": caller.service,
    }
    if caller.tier:
        attributes["reag.tier"] = caller.tier
    for key, value in (request or {}).items():
        if value is not None:
            attributes[f"gen_ai.request.{key}"] = value
    if content and prompt is not None:
        attributes["gen_ai.input.messages"] = _messages_json(_prompt_messages(prompt))
    with _TRACER.start_as_current_span(
        f"{operation} {name}",
        kind=SpanKind.CLIENT,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield LLMSpan(span, content=content)
        except BaseException as exc:
            # The exception's message may quote model output; only its type goes on the span.
            span.set_attribute("error.type", type(exc).__name__)
            span.set_status(Status(StatusCode.ERROR))
            raise
