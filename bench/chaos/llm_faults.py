"""LLM provider faults: 429s, 500s, timeouts, truncated and malformed JSON at set rates.

A service on the consume path asks a scripted model (zero latency, always valid
JSON) for one structured answer per event, through ``LLMClient`` (retries with
backoff, one repair attempt) and a ``FaultyProvider`` that injects the faults.
Transient faults must end in an answer (the LLM layer's retries, then the
consume path's paused-partition retries), never in a dead letter; bad output
must reach ``reag.dlq.v1`` only when the repair attempt was bad too. Counted
per run: cases in, answers out, doubled, dead letters, calls by fault, repairs.

``python -m bench.chaos llm-faults [--cases N] [--seed S]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from faststream.kafka import KafkaRouter
from pydantic import BaseModel, Field

from reag.llm.base import Message
from reag.llm.client import LLMClient
from reag.llm.faults import TRANSIENT_FAULTS, FaultKind, FaultRates, FaultyProvider
from reag.llm.scripted import FakeProvider
from reag.llm.settings import LLMSettings
from reag.v1 import events_pb2 as pb
from services.kit.delivery import Emit, consume
from services.kit.settings import DeliverySettings
from services.kit.topology import ServiceSpec

DEFAULT_RATES = FaultRates(
    rate_limit=0.15, server_error=0.10, timeout=0.05, truncated=0.10, malformed=0.10
)
# Fast retries: the run measures what happens to events, not how long a provider is down.
FAST_LLM = LLMSettings(max_retries=2, backoff_initial_s=0.001, backoff_max_s=0.01, timeout_s=0.05)
FAST_DELIVERY = DeliverySettings(retry_initial_s=0.02, retry_max_s=0.2)


class Draft(BaseModel):
    TestObjective: str = Field(min_length=5)
    PassFailCriteria: list[str] = Field(min_length=1)


def _valid(messages: Sequence[Message], options: dict[str, Any]) -> str:
    return json.dumps(
        {"TestObjective": "Check the answer.", "PassFailCriteria": ["PASS if it answers."]}
    )


@dataclass(frozen=True, slots=True)
class Invocation:
    """One run of the handler for one event: the faults its calls drew and how it ended."""

    case_id: str
    draws: tuple[FaultKind, ...]
    ended: str  # answered, invalid (StructuredOutputError), transient (retries exhausted)

    @property
    def outputs(self) -> list[FaultKind]:
        """The draws that returned text (the first answer, then the repair's)."""
        return [d for d in self.draws if d not in TRANSIENT_FAULTS]

    @property
    def repaired(self) -> bool:
        return len(self.outputs) >= 2  # the first answer and the repair's


@dataclass
class FaultService:
    """The service under faults, and what each of its handler runs saw."""

    provider: FaultyProvider
    inp: str
    out: str
    name: str
    router: KafkaRouter
    invocations: list[Invocation] = field(default_factory=list)


def build_service(
    suffix: str,
    rates: FaultRates,
    *,
    seed: int,
    llm: LLMSettings = FAST_LLM,
    delivery: DeliverySettings = FAST_DELIVERY,
) -> FaultService:
    provider = FaultyProvider(FakeProvider(chat_script=_valid), rates, seed=seed, hang_s=30.0)
    client = LLMClient(provider, settings=llm)
    name, inp, out = f"faults-{suffix}", f"faults-in-{suffix}", f"faults-out-{suffix}"
    router = KafkaRouter()
    service = FaultService(provider, inp, out, name, router)
    spec = ServiceSpec(name, consumes=(inp,), produces=(out,))

    @consume(router, spec, inp, pb.Traffic, max_event_bytes=65536, delivery=delivery)
    async def draft(event: pb.Traffic) -> Emit:
        start = len(provider.log)
        ended = "transient"
        try:
            answer = await client.structured([Message("user", event.query)], Draft)
            ended = "answered"
        except Exception as exc:
            ended = "invalid" if type(exc).__name__ == "StructuredOutputError" else ended
            raise
        finally:
            draws = tuple(provider.log[start:])
            service.invocations.append(Invocation(event.meta.case_id, draws, ended))
        intention = pb.Intention(query=answer.value.TestObjective)
        intention.meta.CopyFrom(event.meta)
        return Emit(out, intention, event.meta.case_id)

    return service


def traffic(case_id: str) -> pb.Traffic:
    event = pb.Traffic(query="Can I eat this?", actual_response="Yes.")
    event.meta.case_id, event.meta.app, event.meta.schema_version = case_id, "chaos", 1
    return event


@dataclass(frozen=True, slots=True)
class FaultCounts:
    cases_in: int
    answers_out: int  # distinct cases answered
    doubled: int  # cases answered more than once
    dead_letters: dict[str, int]  # by error_type
    calls: dict[str, int]  # provider calls by injected fault (ok: none)
    repairs: int  # handler runs whose first answer was bad, so a repair was asked
    repairs_ok: int
    repairs_bad: int  # the repair was bad too: a dead letter
    repairs_cut: int  # the repair met transient faults past the LLM layer's retries: run again
    consume_retries: int  # handler runs that ended with the LLM layer's retries exhausted
    dead_letters_without_repair: int  # must be 0
    lost: int  # cases with neither an answer nor a dead letter

    @property
    def held(self) -> bool:
        """None lost or doubled, and only bad output, after its repair, dead-lettered."""
        only_invalid = set(self.dead_letters) <= {"llm_output_invalid"}
        return not (self.lost or self.doubled or self.dead_letters_without_repair) and only_invalid

    def line(self) -> str:
        return (
            f"cases in {self.cases_in}, answers out {self.answers_out}, doubled {self.doubled}, "
            f"dead letters {sum(self.dead_letters.values())} {self.dead_letters}, "
            f"lost {self.lost}; "
            f"calls {self.calls}; repairs {self.repairs}: {self.repairs_ok} repaired, "
            f"{self.repairs_bad} bad again, {self.repairs_cut} cut short by transient faults; "
            f"consume-level retries {self.consume_retries}; "
            f"dead letters without a repair attempt {self.dead_letters_without_repair}"
        )


def count(
    service: FaultService, case_ids: Sequence[str], answers: Sequence[str], letters: Sequence[Any]
) -> FaultCounts:
    """``answers``: case ids on the output topic; ``letters``: this service's dead letters."""
    answered = Counter(answers)
    dead = {letter.key.decode() for letter in letters}
    last = {inv.case_id: inv for inv in service.invocations}
    repairs = [inv for inv in service.invocations if inv.outputs and inv.outputs[0] != "ok"]
    return FaultCounts(
        cases_in=len(case_ids),
        answers_out=len(answered),
        doubled=sum(1 for n in answered.values() if n > 1),
        dead_letters=dict(Counter(letter.error_type for letter in letters)),
        calls={str(k): n for k, n in service.provider.counts.items()},
        repairs=len(repairs),
        repairs_ok=sum(1 for inv in repairs if inv.ended == "answered"),
        repairs_bad=sum(1 for inv in repairs if inv.ended == "invalid"),
        repairs_cut=sum(1 for inv in repairs if inv.ended == "transient"),
        consume_retries=sum(1 for inv in service.invocations if inv.ended == "transient"),
        dead_letters_without_repair=sum(1 for c in dead if not last[c].repaired),
        lost=sum(1 for c in case_ids if c not in answered and c not in dead),
    )


async def run_faults(bootstrap: str, *, cases: int, seed: int, rates: FaultRates) -> FaultCounts:
    """The scenario over a real broker."""
    from services.kit.broker import make_broker
    from services.kit.settings import KafkaSettings
    from services.kit.testing import produce_events, read_events
    from services.kit.topology import DLQ

    suffix = uuid.uuid4().hex[:10]
    service = build_service(suffix, rates, seed=seed)
    broker = make_broker(KafkaSettings(bootstrap_servers=bootstrap), service.name)
    broker.include_router(service.router)
    case_ids = [f"llm-{suffix}-{i:05d}" for i in range(cases)]

    def settled() -> bool:
        done = {inv.case_id for inv in service.invocations if inv.ended != "transient"}
        return len(done) >= cases

    async with broker:
        await broker.start()
        await produce_events(
            bootstrap, service.inp, [traffic(c) for c in case_ids], lambda e: e.meta.case_id
        )
        for _ in range(1200):
            if settled():
                break
            await asyncio.sleep(0.25)
        answers = await read_events(
            bootstrap, service.out, pb.Intention, lambda xs: len(xs) >= cases, timeout_s=10.0
        )
    letters = await read_events(bootstrap, DLQ, pb.DeadLetter, lambda xs: False, timeout_s=3.0)
    mine = [x for x in letters if x.service == service.name]
    return count(service, case_ids, [a.meta.case_id for a in answers], mine)


def run(argv: list[str] | None = None) -> int:
    """The ``make chaos`` step, on an embedded broker of its own."""
    from shell.stack.ports import free_port
    from shell.stack.tansu import start_tansu

    parser = argparse.ArgumentParser(prog="python -m bench.chaos llm-faults")
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv or [])
    port = free_port()
    proc = start_tansu(port)
    try:
        counts = asyncio.run(
            run_faults(f"127.0.0.1:{port}", cases=args.cases, seed=args.seed, rates=DEFAULT_RATES)
        )
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print(f"llm-faults: rates {asdict(DEFAULT_RATES)}", flush=True)
    print(f"llm-faults: {counts.line()}", flush=True)
    return 0 if counts.held else 1
