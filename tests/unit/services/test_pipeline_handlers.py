"""The elicitor, retriever and oracle handlers under FastStream's TestKafkaBroker, with fakes.

Mechanics only: the LLM is a ``FakeProvider`` and the corpus a list in memory.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

import pytest
from faststream.kafka import KafkaBroker, KafkaRouter, TestKafkaBroker

from reag.corpus.model import Document
from reag.elicitation.directory import PersonaDirectory
from reag.ids import criterion_id_for
from reag.llm.base import Message
from reag.llm.client import LLMClient
from reag.llm.scripted import FakeProvider
from reag.oracle.writer import OracleWriter
from reag.retrieval.reasoning import SelfReasoner
from reag.retrieval.retriever import Retriever, RetrieverConfig
from reag.traffic.policy import FixedPolicies, PolicyDirectory
from reag.traffic.shadow import ShadowGate, no_spend
from reag.v1 import events_pb2 as pb
from services.elicitor.handlers import build_router as elicitor_router
from services.elicitor.settings import ElicitorSettings
from services.kit.settings import DeliverySettings
from services.kit.topology import DLQ
from services.oracle.handlers import build_router as oracle_router
from services.oracle.settings import OracleSettings
from services.retriever.handlers import RetrieverDeps
from services.retriever.handlers import build_router as retriever_router
from services.retriever.settings import RetrieverSettings

SUFFIX = "-unit"
NO_PARK = DeliverySettings(park_s=0)
CORPUS = [
    Document(
        app="demo",
        kind="persona",
        local_id="ckd",
        title="Chronic kidney disease",
        content="Adults on dialysis watch potassium.",
        source="p.yaml",
        metadata={"keywords": ["dialysis", "kidney"]},
    ),
    Document(
        app="demo",
        kind="persona",
        local_id="athlete",
        title="Athlete",
        content="Runners who train daily.",
        source="p.yaml",
        metadata={"keywords": ["marathon"]},
    ),
    Document(
        app="demo",
        kind="requirement",
        local_id="FR-1",
        title="Potassium flag",
        content="The app flags potassium above 200 mg per portion for dialysis users.",
        source="r.md",
    ),
    Document(
        app="demo",
        kind="domain_knowledge",
        local_id="DK-1",
        title="Coconut water",
        content="Coconut water is rich in potassium.",
        source="d.md",
    ),
]
ORACLE = {
    "TestObjective": "Check the potassium flag for a dialysis user.",
    "RequestInScope": True,
    "ExpectedResultsDescription": "The response flags high potassium and advises care.",
    "PassFailCriteria": [
        {
            "concern": "safety",
            "rule": "The app flags potassium above 200 mg per portion for dialysis users.",
            "sources": ["requirement/FR-1"],
            "verb": verb,
            "object": obj,
        }
        for verb, obj in (
            ("states", "a High potassium flag"),
            ("warns_about", "drinking it without checking with the renal team"),
            ("refers_the_user_to", "their renal dietitian"),
        )
    ],
}


def traffic(case: str, app: str = "demo", **fields: Any) -> pb.Traffic:
    event = pb.Traffic(
        query="Can I drink coconut water?",
        actual_response="Yes, enjoy.",
        profile=pb.UserProfile(description="On dialysis."),
        **fields,
    )
    event.meta.case_id, event.meta.app, event.meta.schema_version = case, app, 1
    return event


class Sink:
    """Subscribes to output topics and keeps what arrives, decoded."""

    def __init__(self, broker: KafkaBroker, topics: dict[str, type[Any]]) -> None:
        self.got: dict[str, list[Any]] = {topic: [] for topic in topics}
        for topic, message_type in topics.items():
            self._subscribe(broker, topic, message_type)

    def _subscribe(self, broker: KafkaBroker, topic: str, message_type: type[Any]) -> None:
        @broker.subscriber(topic, group_id=f"sink-{topic}")
        async def keep(body: bytes) -> None:
            self.got[topic].append(message_type.FromString(body))


def broker_with(router: KafkaRouter, outputs: dict[str, type[Any]]) -> tuple[KafkaBroker, Sink]:
    broker = KafkaBroker()
    broker.include_router(router)
    return broker, Sink(broker, {**outputs, DLQ: pb.DeadLetter})


def directory(corpus: list[Document]) -> PersonaDirectory:
    return PersonaDirectory(
        lambda app: [d for d in corpus if d.app == app and d.kind == "persona"],
        lambda app: any(d.app == app for d in corpus),
    )


async def test_elicitor_redacts_first_sheds_by_policy_and_scrubs_its_dead_letters() -> None:
    """The first hop of raw traffic: nothing past it carries the canaries, shed cases
    are counted by reason, and a dead letter keeps a redacted, still parseable event."""
    from reag.metrics import TRAFFIC_SHED
    from reag.traffic.policy import ShadowPolicy, TrafficPolicy

    email, card = "canary.user@example.org", "4111 1111 1111 1111"
    policies = PolicyDirectory(
        FixedPolicies({"sampled": TrafficPolicy(shadow=ShadowPolicy(sample_rate=0.0))})
    )
    corpus = [*CORPUS, *(dataclasses.replace(d, app="sampled") for d in CORPUS)]
    router = elicitor_router(
        ElicitorSettings(topic_suffix=SUFFIX, delivery=NO_PARK),
        directory(corpus),
        policies,
        ShadowGate(no_spend),
    )
    broker, sink = broker_with(router, {"reag.intentions.v1" + SUFFIX: pb.Intention})
    shed_before = TRAFFIC_SHED.labels("sampled", "sampled_out")._value.get()
    events = [
        traffic("r1"),
        traffic("r2", app="sampled"),
        traffic("r3", app="nobody"),
    ]
    events[0].query = f"Mail {email}, card {card}: can I drink this?"
    events[2].query = f"I am {email}"
    events[0].profile.attributes["contact"] = email
    async with TestKafkaBroker(broker) as test_broker:
        for event in events:
            await test_broker.publish(
                event.SerializeToString(),
                "reag.traffic.v1" + SUFFIX,
                key=event.meta.case_id.encode(),
            )
    (intention,) = sink.got["reag.intentions.v1" + SUFFIX]
    raw = intention.SerializeToString()
    assert email.encode() not in raw
    assert card.encode() not in raw
    assert b"[REDACTED:EMAIL]" in raw
    assert TRAFFIC_SHED.labels("sampled", "sampled_out")._value.get() == shed_before + 1
    (letter,) = sink.got[DLQ]
    assert letter.error_type == "app_not_loaded"
    assert email.encode() not in letter.SerializeToString()
    assert pb.Traffic.FromString(letter.value).meta.case_id == "r3"


async def test_elicitor_maps_traffic_to_an_intention_and_dead_letters_unknown_apps() -> None:
    """With no park time an app without a corpus is dead-lettered at once, replayable."""
    corpus = [
        *CORPUS,
        Document(app="bare", kind="requirement", local_id="R", title="R", content="x", source="s"),
    ]
    router = elicitor_router(
        ElicitorSettings(topic_suffix=SUFFIX, delivery=NO_PARK),
        directory(corpus),
        PolicyDirectory(FixedPolicies()),
        ShadowGate(no_spend),
    )
    broker, sink = broker_with(router, {"reag.intentions.v1" + SUFFIX: pb.Intention})
    async with TestKafkaBroker(broker) as test_broker:
        for event in (traffic("c1"), traffic("c2", app="nobody"), traffic("c3", app="bare")):
            await test_broker.publish(
                event.SerializeToString(),
                "reag.traffic.v1" + SUFFIX,
                key=event.meta.case_id.encode(),
            )
    (intention,) = sink.got["reag.intentions.v1" + SUFFIX]
    assert intention.meta.case_id == "c1"
    assert intention.persona.category_id == "ckd"
    assert intention.persona.match_score > 0.5
    assert intention.actual_response == "Yes, enjoy."
    letters = {letter.error_type: letter for letter in sink.got[DLQ]}
    assert set(letters) == {"app_not_loaded", "no_persona_categories"}
    assert "reag dlq replay --reason app_not_loaded" in letters["app_not_loaded"].reason
    assert letters["app_not_loaded"].value == traffic("c2", app="nobody").SerializeToString()
    assert "reag corpus add" in letters["no_persona_categories"].reason


async def test_elicitor_ignores_a_synthetic_origin_claimed_on_the_traffic_topic() -> None:
    """A direct producer that writes ORIGIN_SYNTHETIC is sampled and rate-limited like any
    traffic (issue 23): the topic is open, the claim proves nothing."""
    from reag.traffic.policy import ShadowPolicy, TrafficPolicy

    policies = PolicyDirectory(
        FixedPolicies(
            {
                "sampled": TrafficPolicy(shadow=ShadowPolicy(sample_rate=0.0)),
                "limited": TrafficPolicy(shadow=ShadowPolicy(max_cases_per_minute=1)),
            }
        )
    )
    corpus = [*(dataclasses.replace(d, app=app) for d in CORPUS for app in ("sampled", "limited"))]
    router = elicitor_router(
        ElicitorSettings(topic_suffix=SUFFIX, delivery=NO_PARK),
        directory(corpus),
        policies,
        ShadowGate(no_spend),
    )
    broker, sink = broker_with(router, {"reag.intentions.v1" + SUFFIX: pb.Intention})
    events = [traffic("s1", app="sampled"), *(traffic(f"l{i}", app="limited") for i in range(3))]
    for event in events:
        event.meta.origin = pb.ORIGIN_SYNTHETIC
    async with TestKafkaBroker(broker) as test_broker:
        for event in events:
            await test_broker.publish(
                event.SerializeToString(),
                "reag.traffic.v1" + SUFFIX,
                key=event.meta.case_id.encode(),
            )
    admitted = sink.got.get("reag.intentions.v1" + SUFFIX, [])
    assert [i.meta.case_id for i in admitted] == ["l0"]


def intention(case: str) -> pb.Intention:
    event = pb.Intention(
        query="Can I drink coconut water on dialysis?",
        persona=pb.Persona(category_id="ckd", category_name="CKD"),
        actual_response="Yes, enjoy.",
    )
    event.meta.case_id, event.meta.app, event.meta.schema_version = case, "demo", 1
    return event


def reasoning_script(messages: Sequence[Message], options: dict[str, Any]) -> str:
    if options["json_schema"]["title"] == "ApplicationAnalysis":
        return json.dumps({"analysis": "A dialysis user needs a potassium warning."})
    relevant = "potassium" in messages[-1].content.lower()
    return json.dumps(
        {
            "relevant": relevant,
            "reason": "about potassium" if relevant else "no",
            "evidence": [{"sentence": "Coconut water is rich in potassium.", "why": "the drink"}]
            if relevant
            else [],
        }
    )


@pytest.mark.parametrize("reasoning", [False, True])
async def test_retriever_ranks_the_apps_corpus_and_interprets(reasoning: bool) -> None:
    retriever = Retriever(RetrieverConfig(kernel="bm25", selection="fixed", k=2))
    reasoner = SelfReasoner(LLMClient(FakeProvider(chat_script=reasoning_script)))
    deps = RetrieverDeps(
        retriever, reasoner if reasoning else None, lambda app: [d for d in CORPUS if d.app == app]
    )
    router = retriever_router(RetrieverSettings(topic_suffix=SUFFIX), deps)
    out = "reag.interpretations.v1" + SUFFIX
    broker, sink = broker_with(router, {out: pb.Interpretation})
    async with TestKafkaBroker(broker) as test_broker:
        for event in (intention("c1"), pb.Intention(query="no meta")):
            await test_broker.publish(event.SerializeToString(), "reag.intentions.v1" + SUFFIX)
    (result,) = sink.got[out]
    assert result.meta.case_id == "c1"
    assert result.intention == intention("c1")
    assert (result.kernel, result.k, len(result.documents)) == ("bm25", 2, 2)
    assert [d.rank for d in result.documents] == [1, 2]
    assert result.documents[0].score >= result.documents[1].score
    assert all(d.content for d in result.documents)
    if reasoning:
        assert result.analysis == "A dialysis user needs a potassium warning."
        assert any(d.relevant and d.evidence for d in result.documents)
    else:
        assert not result.analysis
        assert not any(d.relevant for d in result.documents)
    assert [letter.error_type for letter in sink.got[DLQ]] == ["missing_field"]


def interpretation(case: str) -> pb.Interpretation:
    event = pb.Interpretation(
        intention=intention(case),
        k=1,
        kernel="bm25",
        documents=[
            pb.RetrievedDocument(
                doc_id="requirement/FR-1",
                kind="requirement",
                rank=1,
                relevant=True,
                content=CORPUS[2].content,
                evidence=[
                    pb.Evidence(doc_id="requirement/FR-1", sentence=CORPUS[2].content, why="rule")
                ],
            )
        ],
    )
    event.meta.CopyFrom(intention(case).meta)
    return event


async def test_oracle_publishes_the_oracle_and_one_judge_request_per_criterion() -> None:
    # TestKafkaBroker handles the two events in order: c1 gets a valid oracle; c2 gets
    # four invalid replies (two generations, each with the client's repair attempt).
    replies = [json.dumps(ORACLE), "{}", "{}", "{}", "{}"]

    def script(_messages: Sequence[Message], _options: dict[str, Any]) -> str:
        return replies.pop(0)

    writer = OracleWriter(LLMClient(FakeProvider(chat_script=script)))
    router = oracle_router(OracleSettings(topic_suffix=SUFFIX), writer)
    oracles, tier1 = "reag.oracles.v1" + SUFFIX, "reag.judge.tier1.v1" + SUFFIX
    broker, sink = broker_with(router, {oracles: pb.Oracle, tier1: pb.JudgeRequest})
    async with TestKafkaBroker(broker) as test_broker:
        for case in ("c1", "c2"):
            await test_broker.publish(
                interpretation(case).SerializeToString(),
                "reag.interpretations.v1" + SUFFIX,
                key=case.encode(),
            )
    (oracle,) = sink.got[oracles]
    assert oracle.meta.case_id == "c1"
    assert len(oracle.criteria) == 3
    requests = sink.got[tier1]
    assert sorted(r.criterion.criterion_id for r in requests) == [
        criterion_id_for("c1", i) for i in range(3)
    ]
    assert all(r.n_criteria == 3 and r.evidence[0].doc_id == "requirement/FR-1" for r in requests)
    assert all(list(r.criterion.source_doc_ids) == ["requirement/FR-1"] for r in requests)
    (letter,) = sink.got[DLQ]
    assert letter.error_type == "llm_output_invalid"
    assert pb.Interpretation.FromString(letter.value).meta.case_id == "c2"
    # The exception's type, never its message (a validation error may quote the output).
    assert "(OracleInvalidError)" in letter.reason
    assert not replies


def test_the_elicitor_scrubs_an_oversized_dead_letter_cut_to_the_limit() -> None:
    from services.elicitor.handlers import redacted_traffic_bytes

    event = traffic("big")
    event.query = "card 4111 1111 1111 1111 " * 2000
    data = event.SerializeToString()
    out = redacted_traffic_bytes(PolicyDirectory(FixedPolicies()), data, max_bytes=10_000)
    assert len(out) <= 10_000
    assert b"4111 1111" not in out
