"""The JSON the model server (``reag llm serve``) and its client exchange.

Results travel as the plain fields of the result dataclasses; errors as the
name of the reag error type plus its message, so the client raises the same
type the provider raised and the retry policy sees no difference between a
local and a served model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from reag.llm.base import (
    BudgetExceededError,
    CapabilityError,
    ChatResult,
    ConfigurationError,
    ContinuationScore,
    InvalidRequestError,
    LabelParseError,
    LabelProbs,
    LLMError,
    LLMTimeoutError,
    Message,
    PermanentLLMError,
    RateLimitedError,
    TransientLLMError,
    Usage,
)


class WireMessage(BaseModel):
    role: Literal["system", "user", "assistant"]
    content: str


Prompt = str | list[WireMessage]


class ChatRequest(BaseModel):
    model: str | None = None  # None: the server's default model
    messages: list[WireMessage]
    temperature: float = 0.0
    max_tokens: int = Field(default=512, ge=1)
    json_schema: dict[str, Any] | None = None
    seed: int | None = None
    stop: list[str] | None = None


class LabelRequest(BaseModel):
    model: str | None = None  # None: the server's default model
    prompt: Prompt
    labels: list[str] = Field(min_length=2)
    n_samples: int = Field(default=5, ge=1)


class LabelManyRequest(BaseModel):
    model: str | None = None  # None: the server's default model
    prompts: list[Prompt]
    labels: list[str] = Field(min_length=2)
    n_samples: int = Field(default=5, ge=1)


class ScoreRequest(BaseModel):
    model: str | None = None  # None: the server's default model
    context: str
    target: str


class ErrorBody(BaseModel):
    error_type: str
    message: str
    samples: list[str] | None = None


def to_wire_messages(messages: Sequence[Message]) -> list[WireMessage]:
    return [WireMessage(role=m.role, content=m.content) for m in messages]


def to_wire_prompt(prompt: str | Sequence[Message]) -> Prompt:
    return prompt if isinstance(prompt, str) else to_wire_messages(prompt)


def from_wire_messages(messages: Sequence[WireMessage]) -> list[Message]:
    return [Message(m.role, m.content) for m in messages]


def from_wire_prompt(prompt: Prompt) -> str | list[Message]:
    return prompt if isinstance(prompt, str) else from_wire_messages(prompt)


def result_to_wire(result: ChatResult | LabelProbs | ContinuationScore) -> dict[str, Any]:
    return dataclasses.asdict(result)


def chat_from_wire(data: dict[str, Any]) -> ChatResult:
    return ChatResult(**{**data, "usage": Usage(**data["usage"])})


def label_probs_from_wire(data: dict[str, Any]) -> LabelProbs:
    return LabelProbs(**{**data, "usage": Usage(**data["usage"])})


def score_from_wire(data: dict[str, Any]) -> ContinuationScore:
    return ContinuationScore(**{**data, "usage": Usage(**data["usage"])})


# Most specific first: a subclass must be matched before its base.
_ERROR_TYPES: tuple[tuple[type[LLMError], int], ...] = (
    (RateLimitedError, 429),
    (LLMTimeoutError, 504),
    (TransientLLMError, 503),
    (CapabilityError, 501),
    (InvalidRequestError, 422),
    (ConfigurationError, 400),
    (PermanentLLMError, 400),
    (BudgetExceededError, 402),
    (LabelParseError, 422),
    (LLMError, 500),
)
_BY_NAME = {cls.__name__: cls for cls, _ in _ERROR_TYPES}


def error_to_wire(exc: LLMError) -> tuple[int, ErrorBody]:
    status = next(code for cls, code in _ERROR_TYPES if isinstance(exc, cls))
    samples = exc.samples if isinstance(exc, LabelParseError) else None
    return status, ErrorBody(error_type=type(exc).__name__, message=str(exc), samples=samples)


def error_from_wire(body: ErrorBody, server: str) -> LLMError:
    message = f"{body.message} (from the model server at {server})"
    if body.error_type == LabelParseError.__name__:
        return LabelParseError(message, body.samples or [])
    cls = _BY_NAME.get(body.error_type, PermanentLLMError)
    return cls(message)
