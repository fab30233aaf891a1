"""Checking that a cited evidence sentence really is in the document.

Models paraphrase, re-punctuate and sometimes invent quotations. A citation
is kept only if, after normalising case, Unicode forms, quotes, dashes,
Markdown emphasis and white space, it occurs in the document verbatim, or
nearly so (at least ``threshold`` of its characters match one document
sentence, or two adjacent ones, in order, in runs of three or more). A kept citation is replaced by
the document's own sentence when it was matched approximately, so what
travels on is always the document's text.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from difflib import SequenceMatcher

_QUOTES = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "–": "-", "—": "-"})
_MARKUP = re.compile(r"[*_`#>]+")
_SPACE = re.compile(r"\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_EDGE = " \"'.,;:!?()[]-"
_MIN_CHARS = 12
_MIN_RUN = 3


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES).casefold()
    text = _MARKUP.sub("", text)
    return _SPACE.sub(" ", text).strip(_EDGE)


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def _containment(claim: str, sentence: str) -> float:
    """Share of ``claim``'s characters found in ``sentence``, in order, in runs of 3+."""
    matcher = SequenceMatcher(None, claim, sentence, autojunk=False)
    matched = sum(b.size for b in matcher.get_matching_blocks() if b.size >= _MIN_RUN)
    return matched / len(claim)


def locate(claim: str, document_text: str, *, threshold: float = 0.9) -> str | None:
    """The quotation to keep for ``claim``, or None when the document does not contain it."""
    wanted = normalise(claim)
    if len(wanted) < _MIN_CHARS:
        return None
    if wanted in normalise(document_text):
        return claim.strip()
    parts = sentences(document_text)
    # A citation may run over a sentence boundary; adjacent pairs cover that case.
    spans = parts + [f"{a} {b}" for a, b in itertools.pairwise(parts)]
    best, best_score = None, 0.0
    for sentence in spans:
        candidate = normalise(sentence)
        if not candidate:
            continue
        score = _containment(wanted, candidate)
        if score > best_score:
            best, best_score = sentence, score
    return best if best is not None and best_score >= threshold else None
