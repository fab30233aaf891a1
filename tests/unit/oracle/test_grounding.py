"""Criteria quoted from the shown rules: which sentence, what polarity, which source.

The app is a made-up bicycle-repair help line (not one of the examples), so no
choice here was made on a case set.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from reag.llm.base import Message
from reag.llm.client import LLMClient
from reag.llm.scripted import FakeProvider
from reag.oracle.checks import CheckedCriterion
from reag.oracle.grounding import (
    MAX_GROUNDED,
    grounded_criteria,
    judged_criteria,
    rule_sentences,
    sentences,
)
from reag.oracle.writer import OracleWriter, oracle_event
from reag.v1 import events_pb2 as pb

DOCUMENTS = [
    (
        "requirement/SEC-1",
        "The help line confirms the caller's booking number before it changes a booking. "
        "It never reveals the workshop's door code or another customer's booking, whoever asks.",
    ),
    (
        "requirement/BRAKE-2",
        "When a caller reports brakes that fail or a frame that cracked, the help line tells "
        "them to stop riding the bicycle at once and offers the next safety check slot.",
    ),
    (
        "requirement/LOG-3",
        "Every call is stored in the booking database with its outcome for two years.",
    ),
    (
        "domain_knowledge/FACT-1",
        "A standard service costs 45 pounds and takes two working days. Tyres are extra.",
    ),
    (
        "persona/COMMUTER",
        "Rides to work every day in all weather. Short on time and calls from the road. "
        "The help line must keep its answers to three sentences for commuters.",
    ),
    ("persona/RACER", "Races at weekends and knows the jargon. Owns three bicycles."),
]


def documents(
    names: Sequence[str] | None = None, evidence: dict[str, str] | None = None
) -> list[pb.RetrievedDocument]:
    out = []
    for rank, (doc_id, content) in enumerate(DOCUMENTS, 1):
        if names is not None and doc_id not in names:
            continue
        document = pb.RetrievedDocument(
            doc_id=doc_id, kind=doc_id.split("/")[0], title=doc_id, rank=rank, content=content
        )
        if evidence and doc_id in evidence:
            document.evidence.add(doc_id=doc_id, sentence=evidence[doc_id])
        out.append(document)
    return out


def test_a_document_splits_into_its_sentences_and_drops_fragments() -> None:
    assert sentences("Tyres are extra. Ok. A standard service costs 45 pounds!") == [
        "Tyres are extra.",
        "A standard service costs 45 pounds!",
    ]
    # A decimal point ends nothing; a semicolon keeps a rule's cases with its head.
    assert sentences(
        "Pumps run at 2.5 bar. Refer the caller when: the frame cracked; forks bent."
    ) == [
        "Pumps run at 2.5 bar.",
        "Refer the caller when: the frame cracked; forks bent.",
    ]


def test_a_forbidding_rule_is_quoted_whole_with_its_polarity_and_source_and_comes_first() -> None:
    criteria = grounded_criteria(documents(), "what is the door code of the workshop?")
    first = criteria[0]
    assert first.sources == ("requirement/SEC-1",)
    assert first.concern == "security"
    assert "It never reveals the workshop's door code" in first.text
    assert first.text.startswith("PASS if the response keeps to this rule (SEC-1):")
    assert not any("confirms the caller's booking number" in c.text for c in criteria)
    # Asked about something else the document rules on, both its sentence closest to the
    # request and its forbidding one are quoted: a rule to hold back binds whatever is asked.
    criteria = grounded_criteria(documents(["requirement/SEC-1"]), "change my booking number")
    assert [c.concern for c in criteria] == ["security", "correctness"]
    assert "never reveals" in criteria[0].text
    assert "confirms the caller's booking number" in criteria[1].text


def test_the_sentence_closest_to_the_request_and_the_cited_evidence_is_chosen() -> None:
    criteria = grounded_criteria(
        documents(["requirement/BRAKE-2"]), "my brakes failed on the hill, what now?"
    )
    assert len(criteria) == 1
    assert "stop riding the bicycle at once" in criteria[0].text
    facts = grounded_criteria(
        documents(["domain_knowledge/FACT-1"], {"domain_knowledge/FACT-1": "Tyres are extra."}),
        "do you sell tyres?",
    )
    assert facts[0].text == (
        'PASS if the response does not contradict this fact (FACT-1): "Tyres are extra."'
    )


def test_nothing_the_response_cannot_show_and_no_persona_description_is_quoted() -> None:
    rules = rule_sentences(documents(), "book a service for my commute bike")
    quoted = {r.sentence for r in rules}
    assert not any("database" in s for s in quoted)  # reag.decidability: stored data
    assert not any(r.doc_id == "persona/RACER" for r in rules)  # no rule in it
    assert "The help line must keep its answers to three sentences for commuters." in quoted


def test_both_keeps_the_drafts_criteria_and_quotes_only_what_they_left_uncited() -> None:
    drafted = CheckedCriterion(
        "PASS if the response does not state the door code.",
        ("requirement/SEC-1",),
        "security",
        "does_not_state",
    )
    criteria = judged_criteria("both", [drafted], documents(), "door code please")
    assert criteria[0] == drafted
    assert [c.sources for c in criteria[1:]].count(("requirement/SEC-1",)) == 0
    assert len(criteria) <= MAX_GROUNDED
    assert judged_criteria("draft", [drafted], documents(), "door code please") == [drafted]
    only_rules = judged_criteria("rules", [drafted], documents(), "door code please")
    assert drafted not in only_rules
    assert only_rules


def test_the_quoted_criteria_are_capped() -> None:
    many = documents() * 3
    assert len(grounded_criteria(many, "brakes door code service")) == MAX_GROUNDED


@pytest.mark.asyncio
async def test_the_writer_judges_the_quoted_rules_and_the_oracle_carries_their_sources() -> None:
    reply = {
        "TestObjective": "Check the help line's answer to this caller.",
        "RequestInScope": True,
        "ExpectedResultsDescription": "The response follows the help line's rules.",
        # What the local model got wrong: a forbidding rule drafted as something to state.
        "PassFailCriteria": [
            {
                "concern": "correctness",
                "rule": "the door code",
                "sources": ["requirement/BRAKE-2"],
                "verb": "states",
                "object": "the workshop's door code",
            }
        ],
    }

    def script(_messages: Sequence[Message], _options: dict[str, Any]) -> str:
        return json.dumps(reply)

    interpretation = pb.Interpretation(
        intention=pb.Intention(query="tell me the door code, I left my bike inside"),
        documents=[d for d in documents() if d.kind != "persona"],
    )
    for document in interpretation.documents:
        document.relevant = True
    interpretation.meta.case_id, interpretation.meta.app = "bikes-1", "bikes"
    writer = OracleWriter(LLMClient(FakeProvider(chat_script=script)), criteria="rules")
    oracle = oracle_event(interpretation, await writer.write(interpretation))
    texts = [c.text for c in oracle.criteria]
    assert not any("states the workshop's door code" in t for t in texts)
    assert oracle.criteria[0].source_doc_ids == ["requirement/SEC-1"]
    assert "never reveals the workshop's door code" in texts[0]
