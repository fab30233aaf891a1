"""The retriever: rank an app's documents for an intention and keep the top k (REAG 3.2.1-3.2.2).

Kernels, chosen by configuration:

* ``icralm`` - ICRALM on every document (the paper's retriever).
* ``embedding`` - cosine similarity under all-MiniLM-L6-v2.
* ``bm25`` - Okapi BM25, the lexical baseline.
* ``embedding+icralm`` - the embedding keeps the ``prefilter_n`` most similar
  documents, ICRALM ranks those: ICRALM's judgement at a fraction of its cost.
* ``hybrid`` - as ``embedding+icralm``, ranked by a weighted sum of the two
  kernels' z-scores over the candidates, so each corrects the other's
  outliers (``fusion_weight`` is ICRALM's share).

Then k is chosen at the largest score gap (``selection="adaptive"``) or fixed.

The defaults are the best of docs/retrieval.md's benchmark with the local
270M model: ``hybrid`` over the embedding's top 15, adaptive k searched from
``min_k=3`` (the interpreted intention I|<R, K, p> needs at least a
requirement, some knowledge and the persona), plus the paper's buffer of 1.
The buffer trades precision for recall; self-reasoning then marks the
documents that do not apply, while a document never retrieved is lost.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from reag.corpus.model import Document
from reag.llm.client import LLMClient
from reag.metrics import RETRIEVAL_K
from reag.retrieval.adaptive_k import KSelection, adaptive_k, fixed_k
from reag.retrieval.bm25 import Bm25Kernel
from reag.retrieval.embedding import Embedder, EmbeddingKernel
from reag.retrieval.icralm import IcralmKernel
from reag.retrieval.score_cache import ScoreCache
from reag.v1 import events_pb2 as pb

KernelName = Literal["icralm", "embedding", "bm25", "embedding+icralm", "hybrid"]
KERNELS: tuple[KernelName, ...] = ("icralm", "embedding", "bm25", "embedding+icralm", "hybrid")
_NEEDS_LLM = frozenset({"icralm", "embedding+icralm", "hybrid"})


class RetrieverConfigError(ValueError):
    """The configuration asks for something the retriever was not given."""


class RetrieverConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kernel: KernelName = Field(
        default="hybrid", description="Ranking kernel; see reag.retrieval.retriever."
    )
    selection: Literal["adaptive", "fixed"] = Field(
        default="adaptive", description="k at the largest score gap, or a fixed k."
    )
    k: int = Field(default=5, ge=1, description="k when selection is 'fixed'.")
    buffer: int = Field(
        default=1, ge=0, description="Documents kept after the adaptive cut (0 for fixed k)."
    )
    max_k: int = Field(default=8, ge=1, description="Largest k adaptive selection may choose.")
    min_k: int = Field(default=3, ge=1, description="Smallest k adaptive selection may choose.")
    window: float = Field(
        default=0.5, gt=0, le=1, description="Share of the ranking searched for the largest gap."
    )
    prefilter_n: int = Field(
        default=15, ge=1, description="Documents the embedding keeps for ICRALM (combinations)."
    )
    fusion_weight: float = Field(
        default=0.5, ge=0, le=1, description="ICRALM's share of the 'hybrid' score."
    )
    max_doc_chars: int = Field(
        default=2000, ge=100, description="Characters of a document ICRALM reads."
    )

    @model_validator(mode="after")
    def _k_bounds(self) -> RetrieverConfig:
        if self.min_k > self.max_k:
            raise ValueError(f"min_k ({self.min_k}) must not exceed max_k ({self.max_k})")
        return self


@dataclass(frozen=True, slots=True)
class RankedDocument:
    document: Document
    score: float
    rank: int  # 1-based


@dataclass(frozen=True, slots=True)
class Retrieval:
    """Every candidate ranked, and where the cut fell."""

    ranking: list[RankedDocument]
    k: int
    buffer: int
    kernel: str
    n_candidates: int  # documents the final kernel scored

    @property
    def selected(self) -> list[RankedDocument]:
        """The top k plus the buffer: what self-reasoning reads."""
        return self.ranking[: self.k + self.buffer]


def _zscores(values: Sequence[float]) -> list[float]:
    if len(values) < 2:
        return [0.0 for _ in values]
    mean = statistics.fmean(values)
    spread = statistics.pstdev(values)
    if spread == 0:
        return [0.0 for _ in values]
    return [(v - mean) / spread for v in values]


class Retriever:
    """One instance per process: kernels keep their caches (embeddings, BM25 indexes)."""

    def __init__(
        self,
        config: RetrieverConfig | None = None,
        *,
        client: LLMClient | None = None,
        embedder: Embedder | None = None,
        score_cache: ScoreCache | None = None,
        embedding_cache_dir: Path | None = None,
    ) -> None:
        self.config = config or RetrieverConfig()
        if self.config.kernel in _NEEDS_LLM and client is None:
            raise RetrieverConfigError(
                f"kernel {self.config.kernel!r} scores with a language model; pass an LLMClient "
                "or choose the 'embedding' or 'bm25' kernel"
            )
        self.icralm = (
            IcralmKernel(client, cache=score_cache, max_doc_chars=self.config.max_doc_chars)
            if client is not None
            else None
        )
        self._embedder = embedder
        self._embedding_cache_dir = embedding_cache_dir
        self._embedding: EmbeddingKernel | None = None
        self.bm25 = Bm25Kernel()

    @property
    def embedding(self) -> EmbeddingKernel:
        """Created on first use: loading torch costs seconds a BM25-only retriever never pays."""
        if self._embedding is None:
            self._embedding = EmbeddingKernel(self._embedder, cache_dir=self._embedding_cache_dir)
        return self._embedding

    def _icralm(self) -> IcralmKernel:
        if self.icralm is None:
            raise RetrieverConfigError("ICRALM needs an LLMClient")
        return self.icralm

    async def _scores(
        self, intention: pb.Intention, documents: Sequence[Document]
    ) -> tuple[list[Document], list[float]]:
        kernel = self.config.kernel
        if kernel == "icralm":
            return list(documents), await self._icralm().score(intention, documents)
        if kernel == "embedding":
            return list(documents), await self.embedding.score(intention, documents)
        if kernel == "bm25":
            return list(documents), await self.bm25.score(intention, documents)
        cosine = await self.embedding.score(intention, documents)
        order = sorted(range(len(documents)), key=lambda i: -cosine[i])
        keep = order[: self.config.prefilter_n]
        candidates = [documents[i] for i in keep]
        icralm = await self._icralm().score(intention, candidates)
        if kernel == "embedding+icralm":
            return candidates, icralm
        weight = self.config.fusion_weight
        fused = [
            weight * zi + (1 - weight) * zc
            for zi, zc in zip(_zscores(icralm), _zscores([cosine[i] for i in keep]), strict=True)
        ]
        return candidates, fused

    def select(self, scores: Sequence[float]) -> KSelection:
        if self.config.selection == "fixed":
            return fixed_k(len(scores), self.config.k)
        return adaptive_k(
            scores,
            buffer=self.config.buffer,
            max_k=self.config.max_k,
            window=self.config.window,
            min_k=self.config.min_k,
        )

    async def retrieve(self, intention: pb.Intention, documents: Sequence[Document]) -> Retrieval:
        """Rank ``documents`` (the app's corpus) for ``intention`` and choose k."""
        candidates, scores = await self._scores(intention, documents)
        # Ties keep corpus order, so equal scores give a stable ranking.
        order = sorted(range(len(candidates)), key=lambda i: -scores[i])
        ranking = [
            RankedDocument(candidates[i], scores[i], rank) for rank, i in enumerate(order, start=1)
        ]
        choice = self.select(scores)
        if intention.meta.app:
            RETRIEVAL_K.labels(intention.meta.app).observe(choice.k)
        return Retrieval(
            ranking=ranking,
            k=choice.k,
            buffer=choice.buffer,
            kernel=self.config.kernel,
            n_candidates=len(candidates),
        )
