"""Persona categories per app, read from the corpus store and cached for a short while.

The elicitor asks for an app's matcher on every event; reading the store each
time would cost a query per event, caching forever would miss a corpus that
was re-ingested. A matcher is therefore kept for ``ttl_s`` seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from reag.corpus.model import Document
from reag.corpus.store import CorpusStore
from reag.elicitation.personas import PersonaMatcher, categories_from_documents

PersonaLister = Callable[[str], list[Document]]
AppCheck = Callable[[str], bool]


@dataclass
class PersonaDirectory:
    """``list_personas(app)``: the app's persona documents; ``has_app(app)``: any corpus at all."""

    list_personas: PersonaLister
    has_app: AppCheck
    ttl_s: float = 60.0
    clock: Callable[[], float] = time.monotonic
    _cache: dict[str, tuple[float, PersonaMatcher | None]] = field(default_factory=dict)
    _known: dict[str, tuple[float, bool]] = field(default_factory=dict)

    @classmethod
    def from_store(cls, store: CorpusStore, ttl_s: float = 60.0) -> PersonaDirectory:
        return cls(lambda app: store.list(app, kind="persona"), store.has_app, ttl_s)

    def matcher(self, app: str) -> PersonaMatcher | None:
        """None when the app has no persona documents (unknown app or incomplete corpus)."""
        now = self.clock()
        cached = self._cache.get(app)
        if cached is not None and now - cached[0] < self.ttl_s:
            return cached[1]
        categories = categories_from_documents(self.list_personas(app))
        matcher = PersonaMatcher(categories) if categories else None
        self._cache[app] = (now, matcher)
        return matcher

    def knows(self, app: str) -> bool:
        """Whether the app has a corpus here (the ``app_known`` check of ``consume``)."""
        if not app:
            return False
        now = self.clock()
        cached = self._known.get(app)
        if cached is None or now - cached[0] >= self.ttl_s:
            cached = (now, self.has_app(app))
            self._known[app] = cached
        return cached[1]
