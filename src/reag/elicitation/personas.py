"""Mapping a live user's profile onto one of the app's persona categories (REAG 3.1).

Persona is a first-class input of acceptance testing: the same query needs a
different answer for a diabetic and for an athlete. Live traffic carries a
user profile, not a category, so the elicitor has to decide which of the
app's categories (its ``persona`` documents) the user belongs to:

1. a ``persona_hint`` that *names* a category (its id, its address or its
   title) decides it, with score 1.0;
2. otherwise the category whose ``metadata.keywords`` (and ``conditions``)
   appear in the profile wins; a keyword that many categories share weighs
   less than one only this category has (an idf weight), and the score is
   ``1 - exp(-weight)``, so one distinctive keyword already scores ~0.9;
3. a profile no keyword matches still gets the closest category by shared
   words with its title, description and keywords, with a score below
   ``FALLBACK_CEILING`` that says the match is weak. An empty profile gets the
   first category with score 0. Nothing here raises on a profile.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from reag.corpus.model import Document
from reag.v1 import events_pb2 as pb

FALLBACK_CEILING = 0.25

MatchMethod = Literal["hint", "keywords", "closest", "none"]

_STOPWORDS = frozenset(
    """a an and are as at be but by for from has have he her his i in is it its me my of on
    or our she so that the their them they this to was we were what when which who with you
    your not no do does did can could should would will just also very about into over under
    than then there these those been being am all any some more most other such only own same
    too s t""".split()  # noqa: SIM905 - a word list reads better as text
)


class NoPersonaCategoriesError(ValueError):
    """The app's corpus holds no persona documents, so no profile can be mapped."""


def _normalise(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOPWORDS}


@dataclass(frozen=True, slots=True)
class PersonaCategory:
    """One of the app's persona categories, from a ``persona`` corpus document."""

    id: str
    name: str
    description: str
    keywords: tuple[str, ...] = ()

    @classmethod
    def from_document(cls, document: Document) -> PersonaCategory:
        raw: list[object] = []
        for key in ("keywords", "conditions"):
            value = document.metadata.get(key)
            if isinstance(value, str):
                raw.extend(value.split(","))
            elif isinstance(value, Iterable):
                raw.extend(value)
        keywords = tuple(dict.fromkeys(str(k).strip() for k in raw if str(k).strip()))
        return cls(
            document.local_id, document.title or document.local_id, document.content, keywords
        )

    def to_proto(self, *, description: str, score: float) -> pb.Persona:
        return pb.Persona(
            category_id=self.id, category_name=self.name, description=description, match_score=score
        )


def categories_from_documents(documents: Sequence[Document]) -> list[PersonaCategory]:
    return [PersonaCategory.from_document(d) for d in documents if d.kind == "persona"]


@dataclass(frozen=True, slots=True)
class PersonaMatch:
    category: PersonaCategory
    score: float
    method: MatchMethod
    matched_keywords: tuple[str, ...] = ()
    runner_up: PersonaCategory | None = None


def profile_text(profile: pb.UserProfile) -> str:
    """Everything a profile says, as one text: hint, description, attribute names and values."""
    parts = [profile.persona_hint, profile.description]
    parts += [f"{key} {value}" for key, value in sorted(profile.attributes.items())]
    return "\n".join(p for p in parts if p)


@dataclass
class PersonaMatcher:
    """Matches profiles against a fixed list of categories; build one per app corpus version."""

    categories: Sequence[PersonaCategory]
    _names: dict[str, PersonaCategory] = field(init=False, default_factory=dict)
    _patterns: list[list[tuple[str, re.Pattern[str], float]]] = field(
        init=False, default_factory=list
    )

    def __post_init__(self) -> None:
        if not self.categories:
            raise NoPersonaCategoriesError(
                "the app's corpus has no persona documents; add them (kind: persona) with "
                "`reag corpus add`"
            )
        for category in self.categories:
            for name in (category.id, f"persona/{category.id}", category.name):
                self._names.setdefault(_normalise(name), category)
        document_frequency: dict[str, int] = {}
        for category in self.categories:
            for keyword in {_normalise(k) for k in category.keywords}:
                document_frequency[keyword] = document_frequency.get(keyword, 0) + 1
        n = len(self.categories)
        for category in self.categories:
            patterns = []
            for keyword in dict.fromkeys(_normalise(k) for k in category.keywords):
                if not keyword:
                    continue
                weight = math.log(1 + n / document_frequency[keyword])
                pattern = re.compile(r"\b" + r"\s+".join(map(re.escape, keyword.split())) + r"\b")
                patterns.append((keyword, pattern, weight))
            self._patterns.append(patterns)

    def by_id(self, category_id: str) -> PersonaCategory | None:
        return self._names.get(_normalise(category_id))

    def match(self, profile: pb.UserProfile) -> PersonaMatch:
        named = self.by_id(profile.persona_hint) if profile.persona_hint.strip() else None
        if named is not None:
            return PersonaMatch(named, 1.0, "hint")
        text = _normalise(profile_text(profile))
        if not text:
            return PersonaMatch(self.categories[0], 0.0, "none")

        weights: list[float] = []
        hits: list[tuple[str, ...]] = []
        for patterns in self._patterns:
            found = tuple(k for k, pattern, _ in patterns if pattern.search(text))
            hits.append(found)
            weights.append(sum(w for k, _, w in patterns if k in found))
        order = sorted(range(len(self.categories)), key=lambda i: (-weights[i], i))
        best = order[0]
        runner_up = self.categories[order[1]] if len(order) > 1 and weights[order[1]] else None
        if weights[best] > 0:
            return PersonaMatch(
                self.categories[best],
                1.0 - math.exp(-weights[best]),
                "keywords",
                hits[best],
                runner_up,
            )
        return self._closest(text)

    def _closest(self, text: str) -> PersonaMatch:
        words = _words(text)
        scores = []
        for category in self.categories:
            vocabulary = _words(" ".join((category.name, category.description, *category.keywords)))
            overlap = len(words & vocabulary)
            cosine = overlap / math.sqrt(len(words) * len(vocabulary)) if overlap else 0.0
            scores.append(cosine)
        best = max(range(len(scores)), key=lambda i: (scores[i], -i))
        return PersonaMatch(
            self.categories[best], FALLBACK_CEILING * min(1.0, scores[best]), "closest"
        )


def persona_description(category: PersonaCategory, profile: pb.UserProfile) -> str:
    """What the later stages should know of this user: their own profile, else the category's.

    Attribute values may be health data; they go into the event (the oracle
    needs them) and never into a log line.
    """
    lines = []
    if profile.description.strip():
        lines.append(profile.description.strip())
    lines += [f"{key}: {value}" for key, value in sorted(profile.attributes.items()) if value]
    return "\n".join(lines) if lines else category.description
