"""Criteria quoted from the rules the oracle was shown, not written by the model (issue 24).

A 1.5B oracle asked to restate a rule as a claim about the response loses the rule on
the way: it inverts it ("does not ask for a person" for a handoff rule), empties it
("recommends the user") or declines an emergency as out of scope. The rule's own
sentence has none of those faults: its polarity is the requirement's, its source is
known, and it names no domain the prompt would have to. So a grounded criterion is a
sentence of a shown document, chosen by fixed rules and quoted whole:

- from each shown document but a persona description (a persona sentence counts only
  when it states a rule: a modal such as "must" or "never");
- the sentence sharing the most content words with the request and with the evidence
  self-reasoning cited from that document, and, when another sentence of the document
  forbids something, the forbidding one that shares the most with them too: a rule
  on what the answer must hold back binds whatever the request stressed;
- never a sentence the response text cannot decide (``reag.decidability``);
- a document of facts (domain knowledge) gives "does not contradict", every other
  kind "keeps to";
- forbidding sentences first, then the documents in rank order, at most
  ``MAX_GROUNDED`` in all.

Whether this beats the model's own criteria is measured, per app, by
``python -m bench cases --criteria`` (docs/cases.md); ``OracleWriter.criteria`` picks
the source.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from reag.decidability import undecidable
from reag.oracle.checks import CheckedCriterion, content_words, forbids
from reag.oracle.schema import MAX_CRITERIA, MAX_CRITERION_CHARS
from reag.v1 import events_pb2 as pb

CriteriaSource = Literal["draft", "rules", "both"]
"""Where the judged criteria come from: the model's checked draft, the quoted rules, or
the draft's criteria followed by quoted rules of the documents the draft left uncited."""

MAX_GROUNDED = MAX_CRITERIA
FACT_KINDS = frozenset({"domain_knowledge"})
MIN_SENTENCE_WORDS = 3
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'])|\n+")
"""Where a sentence ends: a full stop, question or exclamation mark before a capital, or a
line break. Not a decimal point ("0.3 g"), and not a semicolon, which in a requirement
usually separates the cases of one rule whose head ("must recommend ... when:") it needs."""
_MODAL = re.compile(r"\b(must|shall|should|never|always|only|required?)\b", re.IGNORECASE)
_QUOTE_CHARS = MAX_CRITERION_CHARS - 70


@dataclass(frozen=True, slots=True)
class RuleSentence:
    doc_id: str
    kind: str
    sentence: str
    forbidding: bool


def sentences(content: str) -> list[str]:
    """A document's sentences, whitespace folded; fragments under three words dropped."""
    out = []
    for raw in _SENTENCE_END.split(content):
        text = " ".join(raw.split()).strip(" ;")
        if len(text.split()) >= MIN_SENTENCE_WORDS:
            out.append(text)
    return out


def _candidates(document: pb.RetrievedDocument) -> list[str]:
    found = [s for s in sentences(document.content) if not undecidable(s)]
    if document.kind == "persona":
        found = [s for s in found if _MODAL.search(s)]
    return found


def _best(candidates: Sequence[str], wanted: frozenset[str]) -> str | None:
    """The candidate sharing the most words with ``wanted``; the first one on a tie."""
    best: tuple[int, str] | None = None
    for sentence in candidates:
        shared = len(content_words(sentence) & wanted)
        if best is None or shared > best[0]:
            best = (shared, sentence)
    return best[1] if best else None


def rule_sentences(documents: Iterable[pb.RetrievedDocument], query: str) -> list[RuleSentence]:
    """The sentences to quote, forbidding ones first, then in the documents' order."""
    asked = content_words(query)
    forbidding: list[RuleSentence] = []
    others: list[RuleSentence] = []
    for document in documents:
        candidates = _candidates(document)
        if not candidates:
            continue
        wanted = asked | content_words(" ".join(e.sentence for e in document.evidence))
        chosen = _best(candidates, wanted)
        banned = _best([s for s in candidates if forbids(s)], wanted)
        for sentence in dict.fromkeys(s for s in (banned, chosen) if s is not None):
            rule = RuleSentence(document.doc_id, document.kind, sentence, forbids(sentence))
            (forbidding if rule.forbidding else others).append(rule)
    return forbidding + others


def quote(rule: RuleSentence) -> CheckedCriterion:
    """The criterion that quotes ``rule``, its source id shown beside the quotation."""
    text = rule.sentence
    if len(text) > _QUOTE_CHARS:
        text = text[: _QUOTE_CHARS - 1].rstrip() + "…"
    name = rule.doc_id.split("/", 1)[-1]
    if rule.kind in FACT_KINDS:
        phrase, verb = f'does not contradict this fact ({name}): "{text}"', "does_not_contradict"
    else:
        phrase, verb = f'keeps to this rule ({name}): "{text}"', "keeps_to"
    concern = "security" if rule.forbidding else "correctness"
    return CheckedCriterion(f"PASS if the response {phrase}", (rule.doc_id,), concern, verb)


def grounded_criteria(
    documents: Sequence[pb.RetrievedDocument],
    query: str,
    *,
    after: Sequence[CheckedCriterion] = (),
    limit: int = MAX_GROUNDED,
) -> list[CheckedCriterion]:
    """``after`` followed by quoted rules of the documents none of ``after`` cites."""
    cited = {s for c in after for s in c.sources}
    out = list(after)
    for rule in rule_sentences((d for d in documents if d.doc_id not in cited), query):
        if len(out) >= limit:
            break
        out.append(quote(rule))
    return out


def judged_criteria(
    source: CriteriaSource,
    checked: Sequence[CheckedCriterion],
    documents: Sequence[pb.RetrievedDocument],
    query: str,
) -> list[CheckedCriterion]:
    """The criteria that are judged, from the checked draft and the shown documents."""
    if source == "draft":
        return list(checked)
    if source == "rules":
        return grounded_criteria(documents, query)
    return grounded_criteria(documents, query, after=checked)
