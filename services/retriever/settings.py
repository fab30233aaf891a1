"""Settings of the retriever (env prefix ``REAG_``; ranking under ``REAG_RETRIEVAL__``).

The ranking defaults are the retrieval core's (``RetrieverConfig``), chosen
from its benchmark (docs/retrieval.md). For a cheap configuration that needs
no language model at all: ``REAG_RETRIEVAL__KERNEL=bm25 REAG_SELF_REASONING=false``.
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
            "Model whose log-probabilities ICRALM reads (REAG_RANKING_MODEL). The default "
            "ranking was tuned on Gemma 3 270M's (docs/retrieval.md), which are good enough "
            "to rank and six times cheaper than the 1.5B model's; empty: REAG_LLM_MODEL."
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
        description="Keep ICRALM scores in <state_dir>/cache/icralm.sqlite across restarts.",
    )

    def cache_dir(self) -> Path:
        return self.state_dir / "cache"
