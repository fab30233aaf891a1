"""Which failures of the consume path wait and which dead-letter.

A dead letter is for an event that will never be processed as it is: its
bytes, its schema, the model's output after repair, or a bug. A fault of
something the event depends on (the database, the broker, the LLM provider, the
spend budget) says nothing about the event, so it waits with its partition
paused and is tried again; dead-lettering it would lose every event that
arrived during an outage (Kafka Connect's and Spring Kafka's split of
retriable and non-retriable errors). An event for an app whose corpus is not
loaded yet is neither: it is parked for a bounded time, then dead-lettered as
``app_not_loaded`` for ``reag dlq replay`` once the corpus exists.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from aiokafka.errors import KafkaError, MessageSizeTooLargeError, RecordTooLargeError
from sqlalchemy import exc as sa_exc

from reag.llm.base import (
    BudgetExceededError,
    LLMError,
    StructuredOutputError,
    TransientLLMError,
)
from services.kit.codec import BadEventError, quoted_id

try:  # the PostgreSQL driver; SQLite-only installs may lack it
    from psycopg import OperationalError as PgOperationalError
except ImportError:  # pragma: no cover
    PgOperationalError = sqlite3.OperationalError  # type: ignore[assignment,misc]

FaultKind = Literal["database", "broker", "llm", "budget", "network", "park_full"]

APP_NOT_LOADED = "app_not_loaded"
# An event whose tries met transient faults past DeliverySettings.max_transient_attempts or
# max_transient_s: dead-lettered with its original bytes, replayable once the cause is gone.
TRANSIENT_EXHAUSTED = "transient_exhausted"
# Model output kept in a dead letter's header, for the person fixing the prompt or model:
# a short excerpt, since model output may quote the user's text.
LLM_OUTPUT_EXCERPT_CHARS = 200


class AppNotLoadedError(Exception):
    """The event's app has no corpus here yet; the event is parked, not dead-lettered."""

    def __init__(self, app: str) -> None:
        super().__init__(
            f"app {quoted_id(app)} has no corpus here; add one with "
            "`reag corpus add PATH... --app APP`, "
            f"then `reag dlq replay --reason {APP_NOT_LOADED}`"
        )
        self.app = app


class UndeclaredTopicError(RuntimeError):
    """A handler tried to publish somewhere its ServiceSpec does not declare."""


@dataclass(frozen=True, slots=True)
class Transient:
    """Wait and retry; ``error`` is the exception's type name (logs carry no messages)."""

    kind: FaultKind
    error: str


@dataclass(frozen=True, slots=True)
class NotLoaded:
    app: str
    reason: str


@dataclass(frozen=True, slots=True)
class Poison:
    error_type: str
    reason: str
    extra: dict[str, str] = field(default_factory=dict)


Fault = Transient | NotLoaded | Poison

_DATABASE = (
    sa_exc.OperationalError,
    sa_exc.DisconnectionError,
    sa_exc.InterfaceError,
    sa_exc.TimeoutError,  # no pooled connection came free in time
    sqlite3.OperationalError,  # locked, busy, unable to open
    PgOperationalError,  # connection refused, server closed the connection, admin shutdown
)
_OUTPUT_TOO_LARGE = (MessageSizeTooLargeError, RecordTooLargeError)


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 8:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _infrastructure(exc: BaseException) -> FaultKind | None:
    """The kind of a database or broker fault anywhere in the cause chain: the core library
    may wrap a driver's error in its own."""
    for link in _chain(exc):
        if isinstance(link, sa_exc.DBAPIError) and link.connection_invalidated:
            return "database"
        if isinstance(link, _DATABASE):
            return "database"
        if isinstance(link, KafkaError) and not isinstance(link, _OUTPUT_TOO_LARGE):
            return "broker"
    return None


def _invalid_output(exc: Any) -> Fault:
    output = {"x-reag-llm-output": exc.raw[:LLM_OUTPUT_EXCERPT_CHARS]}
    return Poison(
        "llm_output_invalid",
        f"the model's output stayed invalid after repair ({type(exc).__name__}); use a model "
        "that follows JSON schemas; the x-reag-llm-output header holds an excerpt",
        output,
    )


def _llm_refused(exc: BaseException) -> Fault:
    return Poison(
        "llm_error",
        f"the LLM layer refused for good ({type(exc).__name__}); check the provider, the key "
        "and the model, then `reag dlq replay --reason llm_error`",
    )


def processing_error(exc: BaseException) -> Poison:
    """A bug: the letter names the exception's type, never its message (which may quote the
    event); the service's log has the traceback's frames."""
    return Poison(
        "processing_error",
        f"a bug ({type(exc).__name__}); the service's log has the traceback (ids only); "
        "replay once fixed",
    )


# reag's own exception types say what they are; the first match wins (subclasses first).
# Reasons are reag's own sentences (BadEventError's and AppNotLoadedError's are written to
# quote no more than an id) or fixed text with the exception's type: an exception's message
# may quote user data (a driver's SQL parameters, a provider's echo of the prompt), so it
# never reaches a dead letter or a log.
_KNOWN: tuple[tuple[type[BaseException], Callable[[Any], Fault]], ...] = (
    (AppNotLoadedError, lambda e: NotLoaded(e.app, str(e))),
    (BadEventError, lambda e: Poison(e.error_type, e.reason)),
    (StructuredOutputError, _invalid_output),
    (BudgetExceededError, lambda e: Transient("budget", type(e).__name__)),
    (TransientLLMError, lambda e: Transient("llm", type(e).__name__)),
    (LLMError, _llm_refused),
    (UndeclaredTopicError, lambda e: Poison("processing_error", str(e))),
)


def _known(exc: BaseException) -> Fault | None:
    for kind, fault in _KNOWN:
        if isinstance(exc, kind):
            return fault(exc)
    return None


def classify(exc: BaseException) -> Fault:
    """Transient (wait, retry, never dead-letter), not loaded (park) or poison (dead-letter)."""
    known = _known(exc)
    if known is not None:
        return known
    if isinstance(exc, _OUTPUT_TOO_LARGE):
        return Poison(
            "output_too_large",
            f"an output of this event exceeds the broker's message size ({type(exc).__name__})",
        )
    kind = _infrastructure(exc)
    if kind is None and isinstance(exc, ConnectionError | TimeoutError):
        kind = "network"
    if kind is not None:
        return Transient(kind, type(exc).__name__)
    return processing_error(exc)


def too_large(exc: BaseException) -> bool:
    """Whether a publish failed for the message's size (the producer's or the broker's limit):
    not transient, since the same bytes fail the same way every time."""
    return any(isinstance(link, _OUTPUT_TOO_LARGE) for link in _chain(exc))
