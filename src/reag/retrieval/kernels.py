"""What every ranking kernel offers the retriever: a score per document, higher is better."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from reag.corpus.model import Document
from reag.v1 import events_pb2 as pb


class RankingKernel(Protocol):
    name: str

    async def score(self, intention: pb.Intention, documents: Sequence[Document]) -> list[float]:
        """One score per document, in the documents' order."""
        ...
