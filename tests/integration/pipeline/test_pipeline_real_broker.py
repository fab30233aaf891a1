"""elicitor -> retriever -> oracle over a real Kafka-protocol broker (Tansu, on a socket).

The three services' real routers run in this process with a scripted LLM
(``FakeProvider``): these tests check delivery, keys, fan-out and dead
letters, not what a model writes. Retrieval ranks with BM25 (no model).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, TypeVar

import pytest
from aiokafka import AIOKafkaProducer

from reag.corpus.model import Document
from reag.elicitation.directory import PersonaDirectory
from reag.ids import criterion_id_for, oracle_id_for
from reag.llm.base import Message
from reag.llm.client import LLMClient
from reag.llm.scripted import SCRIPTED_CLAIMS, FakeProvider, oracle_answer
from reag.oracle.writer import OracleWriter
from reag.retrieval.reasoning import SelfReasoner
from reag.retrieval.retriever import Retriever, RetrieverConfig
from reag.traffic.policy import FixedPolicies, PolicyDirectory
from reag.traffic.shadow import ShadowGate, no_spend
from reag.v1 import events_pb2 as pb
from services.elicitor.handlers import build_router as elicitor_router
from services.elicitor.settings import ElicitorSettings
from services.kit.admin import ensure_topics
from services.kit.broker import make_broker
from services.kit.settings import DeliverySettings, KafkaSettings
from services.kit.testing import run_tag
from services.kit.topology import (
    DLQ,
    INTENTIONS,
    INTERPRETATIONS,
    JUDGE_TIER,
    ORACLES,
    TRAFFIC,
)
from services.oracle.handlers import build_router as oracle_router
from services.oracle.settings import OracleSettings
from services.retriever.handlers import RetrieverDeps
from services.retriever.handlers import build_router as retriever_router
from services.retriever.settings import RetrieverSettings
from tests.integration.pipeline.scripted import reasoning_script

pytestmark = [pytest.mark.kafka]

M = TypeVar("M", pb.JudgeRequest, pb.Intention, pb.Interpretation, pb.Oracle, pb.DeadLetter)

MAX_EVENT_BYTES = 8192
POISON = "POISON-ORACLE"
N_CRITERIA = 3


def oracle_script(messages: Sequence[Message], _options: dict[str, Any]) -> str:
    if any(POISON in m.content for m in messages):
        return "{}"
    return oracle_answer(messages, SCRIPTED_CLAIMS[:N_CRITERIA])


def traffic(
    case: str,
    *,
    app: str = "nutrition",
    version: int = 1,
    query: str = "",
    profile: str = "On dialysis three times a week.",
) -> pb.Traffic:
    event = pb.Traffic(
        query=query or f"Can I drink this coconut water? ({case})",
        actual_response="Yes, it is very healthy.",
        profile=pb.UserProfile(description=profile),
        request_id=case,
    )
    event.meta.case_id, event.meta.app, event.meta.schema_version = case, app, version
    return event


@pytest.fixture(scope="module")
async def pipeline(kafka_bootstrap: str, example_corpus: list[Document]) -> AsyncIterator[str]:
    """The three services consuming ``<topic>.<suffix>``, for this module; yields the suffix.

    Started once: the broker takes ~5 s to form each consumer group, so the
    tests share the services and tell their events apart by case id and key.
    """
    topic_suffix = f".{uuid.uuid4().hex[:10]}"
    kafka = KafkaSettings(bootstrap_servers=kafka_bootstrap, max_event_bytes=MAX_EVENT_BYTES)
    await ensure_topics(kafka, topic_suffix)
    await ensure_topics(kafka)  # the shared DLQ
    corpus = {"nutrition": example_corpus}
    personas = PersonaDirectory(
        lambda app: [d for d in corpus.get(app, []) if d.kind == "persona"],
        lambda app: app in corpus,
    )
    retriever = RetrieverDeps(
        Retriever(RetrieverConfig(kernel="bm25", selection="fixed", k=3)),
        SelfReasoner(LLMClient(FakeProvider(chat_script=reasoning_script))),
        lambda app: corpus.get(app, []),
    )
    writer = OracleWriter(LLMClient(FakeProvider(chat_script=oracle_script)))
    broker = make_broker(kafka, f"pipeline{topic_suffix}")
    # An app without a corpus is parked for a second, then dead-lettered as app_not_loaded.
    delivery = DeliverySettings(park_s=1.0, retry_initial_s=0.2, retry_max_s=1.0)
    shared = {"kafka": kafka, "topic_suffix": topic_suffix, "delivery": delivery}
    broker.include_router(
        elicitor_router(
            ElicitorSettings.model_validate(shared),
            personas,
            PolicyDirectory(FixedPolicies()),
            ShadowGate(no_spend),
        )
    )
    broker.include_router(retriever_router(RetrieverSettings.model_validate(shared), retriever))
    broker.include_router(oracle_router(OracleSettings.model_validate(shared), writer))
    async with broker:
        await broker.start()
        yield topic_suffix


async def publish(bootstrap: str, topic: str, values: Sequence[bytes], tag: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", max_request_size=1_048_576)
    await producer.start()
    try:
        for index, value in enumerate(values):
            await producer.send_and_wait(topic, value, key=f"{tag}-{index}".encode())
    finally:
        await producer.stop()


async def collect(
    reader: Any,
    topic: str,
    message_type: type[M],
    keep: Callable[[M], bool],
    n: int,
    timeout_s: float = 60.0,
) -> list[M]:
    """The events on ``topic`` that ``keep`` selects, once there are ``n`` of them."""

    def mine(values: list[bytes]) -> list[M]:
        return [m for m in map(message_type.FromString, values) if keep(m)]

    return mine(await reader(topic, lambda got: len(mine(got)) >= n, timeout_s))


async def test_traffic_in_gives_interpretation_oracle_and_one_judge_request_per_criterion(
    kafka_bootstrap: str,
    pipeline: str,
    reader: Any,
) -> None:
    suffix = pipeline
    cases = [f"flow-{run_tag(8)}-{i}" for i in range(4)]
    await publish(
        kafka_bootstrap, TRAFFIC + suffix, [traffic(c).SerializeToString() for c in cases], "flow"
    )

    def ours(event: Any) -> bool:
        return bool(event.meta.case_id in cases)

    want = len(cases) * N_CRITERIA
    requests = await collect(reader, JUDGE_TIER[1] + suffix, pb.JudgeRequest, ours, want)
    intentions = await collect(reader, INTENTIONS + suffix, pb.Intention, ours, len(cases), 10)
    interpretations = await collect(
        reader, INTERPRETATIONS + suffix, pb.Interpretation, ours, len(cases), 10
    )
    oracles = await collect(reader, ORACLES + suffix, pb.Oracle, ours, len(cases), 10)

    assert sorted(i.meta.case_id for i in intentions) == sorted(cases)
    assert all(i.persona.category_id == "ckd" for i in intentions)
    assert sorted(i.meta.case_id for i in interpretations) == sorted(cases)
    for interpretation in interpretations:
        assert interpretation.kernel == "bm25"
        assert len(interpretation.documents) == 3
        assert interpretation.analysis
        assert all(d.evidence for d in interpretation.documents)
    assert sorted(o.oracle_id for o in oracles) == sorted(oracle_id_for(c) for c in cases)
    assert sorted(r.criterion.criterion_id for r in requests) == sorted(
        criterion_id_for(c, i) for c in cases for i in range(N_CRITERIA)
    )
    for request in requests:
        assert request.n_criteria == N_CRITERIA
        assert request.oracle_id == oracle_id_for(request.meta.case_id)
        assert request.actual_response == "Yes, it is very healthy."
        assert request.persona.category_id == "ckd"
        assert request.evidence
        assert request.test_objective
        assert request.query
        # Each criterion cites a document the oracle was shown (issue 24's traceability).
        (source,) = request.criterion.source_doc_ids
        assert source in {d.doc_id for i in interpretations for d in i.documents}


async def test_each_kind_of_bad_input_is_dead_lettered_and_the_next_good_event_flows(
    kafka_bootstrap: str,
    pipeline: str,
    reader: Any,
) -> None:
    suffix = pipeline
    tag = f"bad-{run_tag(8)}"
    good = [f"{tag}-good-{i}" for i in range(3)]
    poisoned = f"{tag}-poison"
    no_query = traffic(f"{tag}-noq")
    no_query.ClearField("query")
    inputs = [
        ("", traffic(good[0]).SerializeToString()),
        ("undecodable", b"\xff\xfe this is not protobuf"),
        ("missing_field", pb.Traffic(query="q", actual_response="r").SerializeToString()),
        ("missing_field", no_query.SerializeToString()),
        (
            "oversized",
            traffic(f"{tag}-big", query="x" * (MAX_EVENT_BYTES + 10)).SerializeToString(),
        ),
        ("app_not_loaded", traffic(f"{tag}-app", app="no-such-app").SerializeToString()),
        ("unknown_schema_version", traffic(f"{tag}-v9", version=9).SerializeToString()),
        ("", traffic(good[1]).SerializeToString()),
        ("llm_output_invalid", traffic(poisoned, query=f"{POISON} please").SerializeToString()),
        ("", traffic(good[2]).SerializeToString()),
    ]
    await publish(kafka_bootstrap, TRAFFIC + suffix, [value for _, value in inputs], tag)
    expected = sorted(kind for kind, _ in inputs if kind)

    def from_this_test(event: Any) -> bool:
        if isinstance(event, pb.DeadLetter):
            return event.key.decode().startswith(tag) or event.key.decode() == poisoned
        return bool(event.meta.case_id.startswith(tag))

    want = len(good) * N_CRITERIA
    requests = await collect(reader, JUDGE_TIER[1] + suffix, pb.JudgeRequest, from_this_test, want)
    letters = await collect(reader, DLQ, pb.DeadLetter, from_this_test, len(expected))

    assert {r.meta.case_id for r in requests} == set(good)
    assert len(requests) == want
    assert sorted(letter.error_type for letter in letters) == expected
    elicitor_letters = [x for x in letters if x.service == "elicitor"]
    originals = {value for kind, value in inputs if kind not in ("", "llm_output_invalid")}
    (big,) = [value for kind, value in inputs if kind == "oversized"]
    # An oversized event's letter keeps its head only: it is never scanned whole (issue 23).
    (cut,) = [x.value for x in elicitor_letters if x.error_type == "oversized"]
    assert 0 < len(cut) <= MAX_EVENT_BYTES < len(big)
    assert big.startswith(cut)
    assert {x.value for x in elicitor_letters if x.error_type != "oversized"} == originals - {big}
    assert all(x.topic == TRAFFIC + suffix and x.reason for x in elicitor_letters)
    (oracle_letter,) = [x for x in letters if x.service == "oracle"]
    assert oracle_letter.topic == INTERPRETATIONS + suffix
    assert oracle_letter.error_type == "llm_output_invalid"
    assert pb.Interpretation.FromString(oracle_letter.value).meta.case_id == poisoned
    assert "(OracleInvalidError)" in oracle_letter.reason
    reasons = {x.error_type: x.reason for x in letters}
    assert "REAG_KAFKA__MAX_EVENT_BYTES" in reasons["oversized"]
    assert "no-such-app" in reasons["app_not_loaded"]
    assert "schema_version 9" in reasons["unknown_schema_version"]
