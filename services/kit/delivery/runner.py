"""One try at one event: decode, guard, handle, publish, or dead-letter what is poison.

The runner knows nothing of offsets, pauses or the park (``offsets.Delivery`` does); it
answers each try with ``"processed"``, ``"dead_lettered"``, or the fault that keeps the
event waiting (``Transient``, ``NotLoaded``).
"""

from __future__ import annotations

import asyncio
import logging
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from google.protobuf.message import Message

from reag import metrics
from reag.llm.accounting import charged_to
from services.kit.codec import check_declared_type, decode_event
from services.kit.delivery import dead_letters
from services.kit.delivery.outputs import Handler, headers_for, outputs_of
from services.kit.faults import (
    APP_NOT_LOADED,
    TRANSIENT_EXHAUSTED,
    AppNotLoadedError,
    NotLoaded,
    Poison,
    Transient,
    UndeclaredTopicError,
    classify,
)
from services.kit.topology import DLQ, ServiceSpec

log = logging.getLogger("reag.delivery")

AppCheck = Callable[[str], bool]
# Turns an input's bytes into what its dead letter may keep (PII redacted) for the first
# hop of raw traffic; every later topic holds redacted events only.
Scrub = Callable[[bytes], bytes]
# Turns an input's bytes into the handler's event where the topic's payload is not a reag
# event (OTLP spans); raises BadEventError for bytes that can never be processed.
Decode = Callable[[bytes | None], Any]
Done = Literal["processed", "dead_lettered"]


def exhausted_reason(fault: Transient | None, faults: int, waited_s: float) -> Poison:
    """The dead letter of an event that transient faults held too long: counts and a type
    name, never a message."""
    kind, error = (fault.kind, fault.error) if fault else ("unknown", "unknown")
    return Poison(
        TRANSIENT_EXHAUSTED,
        f"{faults} tries met transient faults over {waited_s:.0f} s (last: {kind}, {error}); "
        "REAG_DELIVERY__MAX_TRANSIENT_ATTEMPTS / __MAX_TRANSIENT_S; once the cause is fixed, "
        f"`reag dlq replay --reason {TRANSIENT_EXHAUSTED}`",
    )


@dataclass(frozen=True, slots=True)
class Runner:
    """Everything one service's consumer of one topic needs to try an event."""

    spec: ServiceSpec
    event_type: type[Message]
    handler: Handler[Any]
    publishers: dict[str, Any]
    max_event_bytes: int
    app_known: AppCheck | None
    scrub: Scrub | None
    decode: Decode | None
    dead_letter_max_bytes: int

    async def run(self, record: Any) -> None:
        """Decode, guard, handle and publish; raises whatever went wrong."""
        check_declared_type(record.headers, self.event_type.__name__)
        if self.decode is not None:
            event = self.decode(record.value)
        else:
            event = decode_event(record.value, self.event_type, max_bytes=self.max_event_bytes)
        app = getattr(getattr(event, "meta", None), "app", "")
        # The check may read the store (a cache miss): off the event loop.
        if self.app_known is not None and not await asyncio.to_thread(self.app_known, app):
            raise AppNotLoadedError(app)
        with charged_to(app):
            outputs = outputs_of(await self.handler(event))
        undeclared = [e.topic for e in outputs if not self.spec.may_publish(e.topic)]
        if undeclared:
            raise UndeclaredTopicError(
                f"{self.spec.name} tried to publish to undeclared topic(s) {undeclared}; "
                "declare them in services/kit/topology.py"
            )
        for emit in outputs:
            await self.publishers[emit.topic].publish(
                emit.message.SerializeToString(),
                key=emit.key.encode(),
                headers=headers_for(emit.message),
            )
            metrics.EVENTS_PUBLISHED.labels(self.spec.name, emit.topic).inc()

    async def attempt(self, record: Any, may_park: bool) -> Done | Transient | NotLoaded:
        """One try: processed, dead-lettered, or the fault to wait out or park for."""
        started = time.perf_counter()
        try:
            await self.run(record)
        except Exception as exc:  # noqa: BLE001 - every failure is classified: wait, park, dead-letter
            fault = classify(exc)
            if isinstance(fault, Transient):
                return fault
            if isinstance(fault, NotLoaded):
                if may_park:
                    return fault
                fault = Poison(APP_NOT_LOADED, fault.reason)
            if fault.error_type == "processing_error":
                self._log_bug(record, exc)
            return await self.dead_letter(record, fault)
        metrics.STAGE_LATENCY.labels(self.spec.name).observe(time.perf_counter() - started)
        return "processed"

    async def give_up(self, record: Any, poison: Poison) -> Done | Transient:
        """Dead-letter an event that transient faults held too long (``exhausted_reason``)."""
        return await self.dead_letter(record, poison)

    async def dead_letter(self, record: Any, poison: Poison) -> Done | Transient:
        value = record.value or b""
        if self.scrub is not None:
            value = await asyncio.to_thread(self.scrub, value)
            poison = Poison(
                poison.error_type,
                poison.reason,
                {k: v for k, v in poison.extra.items() if k != "x-reag-llm-output"},
            )
        written = await dead_letters.write(
            self.publishers[DLQ],
            self.spec.name,
            record,
            poison,
            value,
            max_bytes=self.dead_letter_max_bytes,
        )
        if isinstance(written, Transient):
            return written  # the letter waits like any output
        if written == "written":
            metrics.DEAD_LETTERS.labels(self.spec.name, record.topic, poison.error_type).inc()
            log.warning(
                "dead-lettered %s[%d]@%d: %s",
                record.topic,
                record.partition,
                record.offset,
                poison.error_type,
            )
        return "dead_lettered"

    def _log_bug(self, record: Any, exc: BaseException) -> None:
        """The traceback's frames and the exception types of the chain, never a message:
        an exception's text may quote the event (a KeyError of a user's word, SQL parameters)."""
        chain: list[str] = []
        link: BaseException | None = exc
        while link is not None and len(chain) < 8:
            chain.append(type(link).__name__)
            link = link.__cause__ or link.__context__
        log.error(
            "%s failed on %s[%d]@%d: %s\n%s",
            self.spec.name,
            record.topic,
            record.partition,
            record.offset,
            " <- ".join(chain),
            "".join(traceback.format_tb(exc.__traceback__)).rstrip(),
        )
