"""LLM provider faults through the consume path (TestKafkaBroker, a scripted model behind a
fault injector): transient faults never dead-letter, and bad output is dead-lettered only
after the repair attempt was bad too. The 1,000-case run is ``python -m bench.chaos llm-faults``."""

from __future__ import annotations

import pytest
from faststream.kafka import KafkaBroker, TestKafkaBroker

from bench.chaos.llm_faults import DEFAULT_RATES, build_service, count, traffic
from reag.llm.faults import FaultRates
from reag.v1 import events_pb2 as pb
from services.kit.topology import DLQ


async def test_transient_faults_never_dead_letter_and_bad_output_only_after_repair() -> None:
    service = build_service("unit", DEFAULT_RATES, seed=3)
    broker = KafkaBroker()
    broker.include_router(service.router)
    answers: list[str] = []
    letters: list[pb.DeadLetter] = []

    @broker.subscriber(service.out, group_id="sink-out")
    async def keep_answer(body: bytes) -> None:
        answers.append(pb.Intention.FromString(body).meta.case_id)

    @broker.subscriber(DLQ, group_id="sink-dlq")
    async def keep_letter(body: bytes) -> None:
        letters.append(pb.DeadLetter.FromString(body))

    case_ids = [f"case-{i:03d}" for i in range(80)]
    async with TestKafkaBroker(broker) as test_broker:
        for case_id in case_ids:
            await test_broker.publish(
                traffic(case_id).SerializeToString(), service.inp, key=case_id.encode()
            )
    counts = count(service, case_ids, answers, letters)

    transient = sum(counts.calls.get(k, 0) for k in ("rate_limit", "server_error", "timeout"))
    assert transient > 20  # the run met plenty of 429s, 500s and timeouts
    assert counts.repairs > 5  # and plenty of bad first answers
    assert counts.consume_retries > 0  # some outlasted the LLM layer's own retries
    assert counts.lost == 0
    assert counts.doubled == 0
    assert counts.answers_out + sum(counts.dead_letters.values()) == counts.cases_in
    assert set(counts.dead_letters) <= {"llm_output_invalid"}  # never a transient fault
    assert counts.dead_letters_without_repair == 0
    # Exactly the cases whose first answer and repair were both bad are dead letters.
    both_bad = {
        inv.case_id
        for inv in service.invocations
        if inv.ended == "invalid" and all(d != "ok" for d in inv.outputs[:2])
    }
    assert {letter.key.decode() for letter in letters} == both_bad
    assert sum(counts.dead_letters.values()) == len(both_bad)
    assert counts.repairs_bad == len(both_bad)
    assert counts.repairs_ok + counts.repairs_bad + counts.repairs_cut == counts.repairs


def test_fault_rates_must_be_probabilities() -> None:
    with pytest.raises(ValueError, match="sum to <= 1"):
        FaultRates(rate_limit=0.7, malformed=0.5)
