"""The oracle prompt (REAG 3.3): the fields of the paper's figure 2, in our own words.

The context is the interpreted intention I|<R, K, p>: the user's query and
situation, the persona, and the retrieved documents grouped by kind (persona,
requirements, user stories, domain knowledge, background, non-functional
requirements), each with the sentences self-reasoning cited as evidence, plus
the analysis self-reasoning wrote.

Everything that came from a user, from the app or from a model (query,
situation, profile, analysis, response) is untrusted: it reaches the prompt
only inside ``reag.untrusted.fence``'s tags, and the system prompt says
tagged text is material, never instructions. The documents are fenced too:
they may have been drafted by a model, and their cited evidence was. By
default the app's actual response is not shown at all: the oracle says what
*should* happen, and an oracle written while looking at the answer tends to
describe that answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reag.llm.base import Message
from reag.oracle.schema import MAX_CRITERIA
from reag.untrusted import DATA_NOTE, clip, fence
from reag.v1 import events_pb2 as pb

# Kind -> (tag, heading), in the order figure 2 lists them; requirements added.
SECTIONS: tuple[tuple[str, str, str], ...] = (
    ("persona", "untrusted_persona_documents", "User persona (the app's category description)"),
    ("requirement", "untrusted_requirements", "Functional requirements"),
    ("user_story", "untrusted_user_stories", "Relevant user stories"),
    ("domain_knowledge", "untrusted_domain_knowledge", "Domain knowledge"),
    ("background", "untrusted_background", "Background information"),
    ("nfr", "untrusted_non_functional_requirements", "Non-functional requirements"),
)

SYSTEM_PROMPT = """You write test oracles for an LLM-based application: given who the user
is, what they asked, and the application's own documents, you state what the application's
response must do. Ground every criterion in one rule of the documents provided.
First decide whether the documents say the application should answer this request at all
(RequestInScope). Check the rules on scope, safety or escalation and security first, then
correctness and fit for this user, then language and format; style last, if at all.
Each criterion is one claim about the response text: "concern" (what the rule is about),
"rule" (the rule's sentence, quoted), "sources" (the ids in square brackets of the
documents the rule comes from, one or two), "verb" and "object" (what the response states,
recommends, asks for, warns about, refers the user to, declines, or holds back). A rule
that forbids something gives a "does_not_..." verb; a request the documents put out of
scope gives "declines". Write between 2 and {max_criteria} criteria, no two alike.
{data_note}
Reply with one JSON object with the keys "TestObjective", "RequestInScope",
"ExpectedResultsDescription" and "PassFailCriteria" (a list of criteria)."""


@dataclass(frozen=True, slots=True)
class PromptLimits:
    """Bounds that keep the prompt inside a small model's context window."""

    max_documents: int = 8
    max_doc_chars: int = 900
    max_evidence_per_doc: int = 3
    show_response: bool = False
    max_response_chars: int = 2000


def used_documents(
    interpretation: pb.Interpretation, limits: PromptLimits
) -> list[pb.RetrievedDocument]:
    """The documents self-reasoning judged relevant; all of them if it judged none.

    Self-reasoning may be switched off (no verdicts at all) or may reject
    every document; the oracle is then written from the ranked documents as
    they are, rather than from nothing.
    """
    ranked = sorted(interpretation.documents, key=lambda d: d.rank or 1_000_000)
    relevant = [d for d in ranked if d.relevant]
    return (relevant or ranked)[: limits.max_documents]


def _document_block(document: pb.RetrievedDocument, limits: PromptLimits) -> str:
    lines = [
        f"[{document.doc_id}] {document.title}".strip(),
        clip(document.content, limits.max_doc_chars),
    ]
    evidence = list(document.evidence)[: limits.max_evidence_per_doc]
    if evidence:
        lines.append("Cited evidence:")
        lines += [
            f'- "{clip(e.sentence, 300)}"' + (f" ({clip(e.why, 200)})" if e.why else "")
            for e in evidence
        ]
    return "\n".join(line for line in lines if line)


def build_messages(
    interpretation: pb.Interpretation, limits: PromptLimits | None = None
) -> list[Message]:
    limits = limits or PromptLimits()
    intention = interpretation.intention
    persona = intention.persona
    parts = [
        "User input (the current query):\n" + fence("untrusted_user_query", intention.query),
        "User situation:\n"
        + fence("untrusted_user_situation", intention.situation or "Not given."),
        "User persona:\n"
        + fence(
            "untrusted_user_persona",
            f"Category: {persona.category_name or persona.category_id or 'unknown'}\n"
            f"{persona.description}",
        ),
    ]
    documents = used_documents(interpretation, limits)
    for kind, tag, heading in SECTIONS:
        blocks = [_document_block(d, limits) for d in documents if d.kind == kind]
        if blocks:
            parts.append(f"{heading}:\n" + fence(tag, "\n\n".join(blocks)))
    others = [d for d in documents if d.kind not in {k for k, _, _ in SECTIONS}]
    if others:
        parts.append(
            "Other documents:\n"
            + fence(
                "untrusted_other_documents", "\n\n".join(_document_block(d, limits) for d in others)
            )
        )
    if interpretation.analysis.strip():
        parts.append(
            "Interpretation of the user's intention (from the documents above):\n"
            + fence("untrusted_interpretation", interpretation.analysis)
        )
    if limits.show_response and intention.actual_response:
        parts.append(
            "The application's actual response (for context only; the oracle states "
            "what a correct response does, whatever this one did):\n"
            + fence("untrusted_app_response", intention.actual_response, limits.max_response_chars)
        )
    parts.append(
        "Using all of the above, describe how the application should respond to this user and "
        "write the pass/fail criteria."
    )
    system = SYSTEM_PROMPT.format(max_criteria=MAX_CRITERIA, data_note=DATA_NOTE)
    return [Message("system", system), Message("user", "\n\n".join(parts))]


def cited_evidence(documents: Sequence[pb.RetrievedDocument]) -> list[pb.Evidence]:
    """Every evidence sentence of the given documents, in rank order, with its doc id set."""
    out: list[pb.Evidence] = []
    for document in documents:
        for evidence in document.evidence:
            item = pb.Evidence()
            item.CopyFrom(evidence)
            if not item.doc_id:
                item.doc_id = document.doc_id
            out.append(item)
    return out
