"""The retriever's core (REAG 3.2), with no Kafka in it.

``Retriever`` ranks an app's documents for an intention (ICRALM, embedding,
BM25 or a combination) and chooses k at the largest score gap;
``SelfReasoner`` turns the selected documents into a ``pb.Interpretation``
with relevance verdicts, verified evidence and the application analysis.
"""

from reag.retrieval.adaptive_k import KSelection, adaptive_k, fixed_k, threshold_k
from reag.retrieval.bm25 import Bm25Kernel
from reag.retrieval.embedding import Embedder, EmbeddingKernel, EmbeddingModelError
from reag.retrieval.fusion import rank_normalise, reciprocal_rank_fusion
from reag.retrieval.icralm import IcralmKernel, icralm_context
from reag.retrieval.intention import intention_text, make_intention
from reag.retrieval.pinned import pinned_addresses, with_pinned
from reag.retrieval.reasoning import InterpretationOutcome, SelfReasoner
from reag.retrieval.rerank import LlmReranker, reranked_scores
from reag.retrieval.retriever import (
    KERNELS,
    KernelName,
    RankedDocument,
    Retrieval,
    Retriever,
    RetrieverConfig,
    RetrieverConfigError,
)
from reag.retrieval.score_cache import ScoreCache

__all__ = [
    "KERNELS",
    "Bm25Kernel",
    "Embedder",
    "EmbeddingKernel",
    "EmbeddingModelError",
    "IcralmKernel",
    "InterpretationOutcome",
    "KSelection",
    "KernelName",
    "LlmReranker",
    "RankedDocument",
    "Retrieval",
    "Retriever",
    "RetrieverConfig",
    "RetrieverConfigError",
    "ScoreCache",
    "SelfReasoner",
    "adaptive_k",
    "fixed_k",
    "icralm_context",
    "intention_text",
    "make_intention",
    "pinned_addresses",
    "rank_normalise",
    "reciprocal_rank_fusion",
    "reranked_scores",
    "threshold_k",
    "with_pinned",
]
