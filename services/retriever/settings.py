"""Settings of the retriever (env prefix ``REAG_``; ranking under ``REAG_RETRIEVAL__``).

The ranking defaults are the retrieval core's (``RetrieverConfig``), chosen
for recall at most 6 documents on three labelled corpora (docs/retrieval.md):
RRF of BM25 and the best-passage embedding, which needs no language model. For a configuration
that makes no model call at all, add ``REAG_SELF_REASONING=false``. The LLM
reranker is off by default (``REAG_RETRIEVAL__RERANK_N=0``): on the 2-core
reference machine the local 1.5B model took 70-117 s per intention and did
not beat the default's ranking.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from reag.retrieval.retriever import RetrieverConfig
from services.kit.settings import ServiceSettings


class RetrieverSettings(ServiceSettings):
    retrieval: RetrieverConfig = Field(
        default_factory=RetrieverConfig,
        description="Kernel, k selection, buffer and prefilter (REAG_RETRIEVAL__KERNEL, ...).",
    )
    ranking_model: str | None = Field(
        default="local:gemma-3-270m",
        description=(
            "Model whose log-probabilities ICRALM reads (REAG_RANKING_MODEL), used only by "
            "the ICRALM kernels (icralm, embedding+icralm, hybrid, rrf with icralm); Gemma 3 "
            "270M's are good enough to rank and six times cheaper than the 1.5B model's; "
            "empty: REAG_LLM_MODEL."
        ),
    )
    rerank_model: str | None = Field(
        default="local:qwen2.5-coder-1.5b-instruct",
        description=(
            "Instruct model that judges P(relevant) when REAG_RETRIEVAL__RERANK_N > 0 "
            "(REAG_RERANK_MODEL); empty: REAG_LLM_MODEL."
        ),
    )
    self_reasoning: bool = Field(
        default=True,
        description=(
            "Run self-reasoning (relevance, evidence, analysis) on the selected documents. "
            "Off: the interpretation carries the ranked documents without verdicts."
        ),
    )
    reasoning_model: str | None = Field(
        default=None, description="Model that does self-reasoning; unset: REAG_LLM_MODEL."
    )
    max_evidence: int = Field(
        default=2,
        ge=0,
        le=3,
        description=(
            "Evidence sentences cited per document (at most 3). Two keep the local model's "
            "document checks short: each cited sentence is decoded token by token."
        ),
    )
    reasoning_concurrency: int = Field(
        default=4, ge=1, description="Documents checked at once during self-reasoning."
    )
    reasoning_max_tokens: int = Field(
        default=600, ge=64, description="Token limit of each self-reasoning call."
    )
    corpus_cache_s: float = Field(
        default=60.0,
        ge=0,
        description="Seconds an app's documents are kept before the corpus store is read again.",
    )
    score_cache: bool = Field(
        default=True,
        description=(
            "Keep ICRALM scores and reranker judgements in <state_dir>/cache/icralm.sqlite "
            "across restarts."
        ),
    )

    def cache_dir(self) -> Path:
        return self.state_dir / "cache"
