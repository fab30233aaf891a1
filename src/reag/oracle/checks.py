"""Fixed checks from a drafted oracle to the criteria that are judged (issue 24).

The draft's form already limits a criterion to one claim about the response
text; these checks need what the form cannot hold, the documents the oracle
was shown, and apply the same rules on every app:

- **citations**: a criterion's sources must be documents the oracle saw
  (an id as shown, or its local part); one that cites none of them is dropped
  (when no document was shown at all, criteria are kept with no source);
- **decidable**: a claim about the interface, a purchase flow, stored data,
  messages sent or what happens later cannot be read in a response and is dropped;
- **polarity from the rule**: a rule with a forbidding modal ("must not",
  "never", "shall not", "do not" ...) yields a negative claim; a positive verb
  with a negative counterpart is turned into it ("states" -> "does not state");
- **scope**: when the draft says the request is out of scope, a criterion for
  answering it (a positive claim whose concern is not scope, safety or security)
  is dropped, what the response must hold back stays, and one criterion says
  that the response declines it;
- **forbidden asks**: when the request shares ``ASK_OVERLAP`` or more content words
  with a forbidding sentence of a shown rule document (not a persona) and no kept
  criterion already holds back what that document forbids, a criterion is added that
  the response does not state what the sentence forbids, citing it. A small model
  asked for a secret can judge the request in scope and write only a scope
  criterion, or none about the secret at all; the rule it was shown decides anyway;
- **no near-duplicates**: a criterion whose content words overlap an earlier one's
  by a Jaccard index of ``DUPLICATE_JACCARD`` or more is dropped (token overlap
  rather than the embedding kernel: the oracle service loads no embedding model);
- **order**: scope, safety and security before correctness, persona fit,
  language and format, and style (``CONCERN_ORDER``), stable within a concern.

Every drop and change is counted in ``CheckCounts``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from reag.decidability import UNDECIDABLE
from reag.oracle.schema import (
    CONCERN_ORDER,
    MAX_SOURCES,
    NEGATION,
    NEGATIVE_VERBS,
    CriterionForm,
    OracleDraft,
    render,
)
from reag.v1 import events_pb2 as pb

DUPLICATE_JACCARD = 0.6
"""Content-word overlap from which two criteria of a case are near-duplicates (the bench's)."""

FORBIDDING = re.compile(
    r"\b(must not|mustn't|shall not|shan't|should not|shouldn't|may not|cannot|can't|"
    r"never|do not|don't|does not|doesn't|is not allowed|are not allowed|not permitted|"
    r"prohibited|forbidden)\b",
    re.IGNORECASE,
)


ASK_OVERLAP = 2
"""Content words a request shares with a forbidding sentence for the sentence to bind
the case. Chosen before any measurement (one shared word is too often a common noun);
not tuned on any case set."""
MAX_ASKS_ADDED = 2
ASK_RULE_CHARS = 160

SCOPE_KEPT = frozenset({"scope", "safety", "security"})
DECLINE_OBJECT = "the request, as outside what the application is for"

_STOP_WORDS = """a an the and or of to in on for with is are be it its this that if pass fail
response user application app does not do any as by at from their they them"""
_STOP = frozenset(_STOP_WORDS.split())
_MODAL = """must mustn t shall shan should shouldn may cannot can never don doesn
allowed permitted prohibited forbidden whoever however whatever"""
_MODAL_WORDS = frozenset(_MODAL.split())
_SENTENCE = re.compile(r"[^.!?;\n]+[.!?;]?")


@dataclass(frozen=True, slots=True)
class CheckedCriterion:
    """A criterion as judged: its rendered text and the documents it derives from."""

    text: str
    sources: tuple[str, ...]
    concern: str
    verb: str


@dataclass
class CheckCounts:
    """What the checks dropped or changed in one draft."""

    uncited: int = 0
    undecidable: int = 0
    duplicate: int = 0
    polarity_fixed: int = 0
    out_of_scope_dropped: int = 0
    decline_added: int = 0
    forbidden_ask_added: int = 0

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass
class Checked:
    criteria: list[CheckedCriterion] = field(default_factory=list)
    counts: CheckCounts = field(default_factory=CheckCounts)


def forbids(rule: str) -> bool:
    """Whether a requirement sentence forbids something (a forbidding modal word)."""
    return bool(FORBIDDING.search(rule))


def resolve_sources(cited: Iterable[str], shown: Sequence[str]) -> tuple[str, ...]:
    """The shown document ids a criterion's citations name, at most ``MAX_SOURCES``.

    A small model writes "FR-01" or "[requirement/FR-01]" for "requirement/FR-01":
    the full id and its local part both resolve, case-insensitively.
    """
    by_name: dict[str, str] = {}
    for doc_id in shown:
        by_name.setdefault(doc_id.lower(), doc_id)
        by_name.setdefault(doc_id.split("/", 1)[-1].lower(), doc_id)
    out: list[str] = []
    for raw in cited:
        found = by_name.get(raw.strip().strip("[]()").strip().lower())
        if found and found not in out:
            out.append(found)
    return tuple(out[:MAX_SOURCES])


def content_words(text: str) -> frozenset[str]:
    return frozenset(w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP)


def near_duplicate(text: str, earlier: Iterable[str], threshold: float = DUPLICATE_JACCARD) -> bool:
    mine = content_words(text)
    for other in earlier:
        words = content_words(other)
        union = mine | words
        if union and len(mine & words) / len(union) >= threshold:
            return True
    return False


def _polarity(form: CriterionForm, counts: CheckCounts) -> str:
    if forbids(form.rule) and form.verb not in NEGATIVE_VERBS and form.verb in NEGATION:
        counts.polarity_fixed += 1
        return NEGATION[form.verb]
    return form.verb


def _decline_sources(draft: OracleDraft, shown: Sequence[str]) -> tuple[str, ...]:
    """What a declining criterion cites: the draft's scope sources, else the first
    non-persona document it cited (the rule the answered request broke)."""
    scope = resolve_sources(
        (s for f in draft.criteria if f.concern == "scope" for s in f.sources), shown
    )
    if scope:
        return scope
    cited = resolve_sources((s for f in draft.criteria for s in f.sources), shown)
    rules = [c for c in cited if not c.startswith("persona/")]
    return tuple((rules or list(cited))[:1])


def rule_texts(documents: Iterable[pb.RetrievedDocument]) -> dict[str, str]:
    """The shown documents that can hold a rule (every kind but persona), by id."""
    return {d.doc_id: d.content for d in documents if d.kind != "persona"}


def forbidden_asks(query: str, rules: Mapping[str, str]) -> list[tuple[str, str]]:
    """(document id, forbidding sentence) for each rule sentence the request touches.

    One sentence per document, the one sharing the most content words with the
    request, and only when it shares ``ASK_OVERLAP`` or more; modal words do not count.
    """
    asked = content_words(query) - _MODAL_WORDS
    found: list[tuple[int, str, str]] = []
    for doc_id, content in rules.items():
        best: tuple[int, str] | None = None
        for sentence in _SENTENCE.findall(content):
            if not forbids(sentence):
                continue
            shared = len(asked & (content_words(sentence) - _MODAL_WORDS))
            if shared >= ASK_OVERLAP and (best is None or shared > best[0]):
                best = (shared, " ".join(sentence.split()).rstrip(" .;"))
        if best:
            found.append((best[0], doc_id, best[1]))
    found.sort(key=lambda f: -f[0])
    return [(doc_id, sentence) for _, doc_id, sentence in found]


def _ask_criterion(doc_id: str, sentence: str) -> CheckedCriterion:
    quoted = sentence if len(sentence) <= ASK_RULE_CHARS else sentence[: ASK_RULE_CHARS - 1] + "…"
    obj = f'anything the rule "{quoted}" forbids'
    return CheckedCriterion(render("does_not_state", obj), (doc_id,), "security", "does_not_state")


def check_draft(
    draft: OracleDraft,
    shown: Sequence[str],
    *,
    query: str = "",
    rules: Mapping[str, str] | None = None,
) -> Checked:
    """The draft's criteria after the fixed checks, in checking order (module docstring).

    ``rules`` maps the shown non-persona documents' ids to their text, ``query`` is
    the user's request; without them the forbidden-ask check does not run.
    """
    out = Checked()
    counts = out.counts
    kept: list[CheckedCriterion] = []
    for form in draft.criteria:
        sources = resolve_sources(form.sources, shown)
        # With no document shown (retrieval found nothing relevant) there is nothing to
        # cite: the criteria come from the request and the analysis alone, and are kept
        # with no source, as before citations, rather than dead-lettering the case.
        if not sources and shown:
            counts.uncited += 1
            continue
        if UNDECIDABLE.search(form.object):
            counts.undecidable += 1
            continue
        verb = _polarity(form, counts)
        if not draft.in_scope and form.concern not in SCOPE_KEPT and verb not in NEGATIVE_VERBS:
            counts.out_of_scope_dropped += 1
            continue
        text = render(verb, form.object)
        if near_duplicate(text, (c.text for c in kept)):
            counts.duplicate += 1
            continue
        kept.append(CheckedCriterion(text, sources, form.concern, verb))
    if not draft.in_scope and not any(c.verb == "declines" for c in kept):
        scope_sources = _decline_sources(draft, shown)
        if scope_sources:
            counts.decline_added += 1
            decline = CriterionForm(
                concern="scope",
                rule="out of scope",
                sources=list(scope_sources),
                verb="declines",
                object=DECLINE_OBJECT,
            )
            kept.insert(0, CheckedCriterion(decline.render(), scope_sources, "scope", "declines"))
    held_back = {s for c in kept if c.verb in NEGATIVE_VERBS for s in c.sources}
    for doc_id, sentence in forbidden_asks(query, rules or {})[:MAX_ASKS_ADDED]:
        if doc_id in held_back:
            continue
        counts.forbidden_ask_added += 1
        kept.append(_ask_criterion(doc_id, sentence))
    out.criteria = sorted(kept, key=lambda c: CONCERN_ORDER.index(c.concern))
    return out
