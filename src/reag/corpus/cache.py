"""An app's documents, read from the corpus store at most once per TTL.

The retriever needs them on every event; a re-ingested corpus must still
show up within ``ttl_s``, hence a ``cachetools.TTLCache`` and not a dict.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter

from cachetools import TTLCache, cachedmethod

from reag.corpus.model import Document
from reag.corpus.store import CorpusStore

MAX_APPS = 1024
"""Apps whose documents are cached at once: a memory bound, not a limit."""


@dataclass
class CachedCorpus:
    """``corpus(app)``: the app's documents, at most ``ttl_s`` old (none for no app)."""

    store: CorpusStore
    ttl_s: float
    clock: Callable[[], float] = time.monotonic
    _cache: TTLCache[str, list[Document]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._cache = TTLCache(MAX_APPS, self.ttl_s, timer=self.clock)

    @cachedmethod(attrgetter("_cache"))
    def __call__(self, app: str) -> list[Document]:
        return self.store.list(app) if app else []
