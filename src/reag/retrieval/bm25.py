"""BM25 (Okapi, through rank-bm25): the lexical baseline the other kernels must beat."""

from __future__ import annotations

import asyncio
import hashlib
import re
import threading
from collections.abc import Sequence

from reag.corpus.model import Document
from reag.retrieval.intention import intention_text
from reag.v1 import events_pb2 as pb

# Function words carry no topic; without them a long persona line does not drown the query.
_STOPWORD_TEXT = """
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its itself
just me more most my myself no nor not now of off on once only or other our ours out over own
same she should so some such than that the their theirs them then there these they this those
through to too under until up very was we were what when where which while who whom why will
with would you your yours user query situation
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_MAX_INDEXES = 16  # one per corpus version in use; old versions fall out first
_TOKEN = re.compile(r"[a-z0-9]+(?:[.'][a-z0-9]+)*")


def tokenize(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOPWORDS]


class Bm25Kernel:
    name = "bm25"

    def __init__(self) -> None:
        self._indexes: dict[str, object] = {}
        self._lock = threading.Lock()

    def _index(self, documents: Sequence[Document]) -> object:
        from rank_bm25 import BM25Okapi

        ordered = "\x1f".join(d.content_hash for d in documents)
        key = hashlib.sha256(ordered.encode()).hexdigest()
        with self._lock:
            index = self._indexes.get(key)
            if index is None:
                index = BM25Okapi([tokenize(d.text) for d in documents])
                if len(self._indexes) >= _MAX_INDEXES:
                    self._indexes.pop(next(iter(self._indexes)))
                self._indexes[key] = index
            return index

    def scores_for(self, text: str, documents: Sequence[Document]) -> list[float]:
        if not documents:
            return []
        index = self._index(documents)
        return [float(s) for s in index.get_scores(tokenize(text))]  # type: ignore[attr-defined]

    async def score(self, intention: pb.Intention, documents: Sequence[Document]) -> list[float]:
        return await asyncio.to_thread(self.scores_for, intention_text(intention), documents)
