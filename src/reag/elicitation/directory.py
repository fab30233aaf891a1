"""Persona categories per app, read from the corpus store and cached for a short while.

The elicitor asks for an app's matcher on every event; reading the store each
time would cost a query per event, caching forever would miss a corpus that
was re-ingested. A matcher (and whether the app has a corpus at all) is
therefore kept for ``ttl_s`` seconds, in a ``cachetools.TTLCache`` rather than
hand-written expiry bookkeeping.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter

from cachetools import TTLCache, cachedmethod

from reag.corpus.model import Document
from reag.corpus.store import CorpusStore
from reag.elicitation.personas import PersonaMatcher, categories_from_documents

PersonaLister = Callable[[str], list[Document]]
AppCheck = Callable[[str], bool]

MAX_APPS = 1024
"""Apps cached at once: a bound on memory, far above the apps one deployment serves."""


@dataclass
class PersonaDirectory:
    """``list_personas(app)``: the app's persona documents; ``has_app(app)``: any corpus at all."""

    list_personas: PersonaLister
    has_app: AppCheck
    ttl_s: float = 60.0
    clock: Callable[[], float] = time.monotonic
    _matchers: TTLCache[str, PersonaMatcher | None] = field(init=False, repr=False)
    _known: TTLCache[str, bool] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._matchers = TTLCache(MAX_APPS, self.ttl_s, timer=self.clock)
        self._known = TTLCache(MAX_APPS, self.ttl_s, timer=self.clock)

    @classmethod
    def from_store(cls, store: CorpusStore, ttl_s: float = 60.0) -> PersonaDirectory:
        return cls(lambda app: store.list(app, kind="persona"), store.has_app, ttl_s)

    @cachedmethod(attrgetter("_matchers"))
    def matcher(self, app: str) -> PersonaMatcher | None:
        """None when the app has no persona documents (unknown app or incomplete corpus)."""
        categories = categories_from_documents(self.list_personas(app))
        return PersonaMatcher(categories) if categories else None

    def knows(self, app: str) -> bool:
        """Whether the app has a corpus here (the ``app_known`` check of ``consume``)."""
        return bool(app) and self._has_app(app)

    @cachedmethod(attrgetter("_known"))
    def _has_app(self, app: str) -> bool:
        return self.has_app(app)
