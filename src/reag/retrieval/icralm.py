"""ICRALM (REAG eq. 2, after Ram et al.): rank a document by how well it predicts the intention.

score(Doc) = (1/|I|) * sum_t log p(i_t | Task, Doc, i_<t), the mean
log-probability of the intention's tokens after a retrieval prompt and the
document, read from the model through ``LLMClient.score_continuation``.

The prompt places the document first and ends with a cue after which the
intention is the natural next text: a document that governs the request
makes its words (the product, the condition, the nutrient) more probable.
The cue asks for a request the passage *applies to*, not one it answers,
because REAG retrieves specifications rather than answers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from reag.corpus.model import Document
from reag.llm.client import LLMClient
from reag.retrieval.intention import intention_text
from reag.retrieval.score_cache import ScoreCache
from reag.v1 import events_pb2 as pb

KIND_LABELS = {
    "requirement": "functional requirement",
    "user_story": "user story",
    "persona": "user persona",
    "domain_knowledge": "domain knowledge",
    "background": "background",
    "nfr": "non-functional requirement",
}


def icralm_context(document: Document, *, app: str = "", max_doc_chars: int = 2000) -> str:
    """The Task prompt and the document: everything before the intention's tokens."""
    body = document.content
    if len(body) > max_doc_chars:
        body = body[:max_doc_chars].rsplit(" ", 1)[0] + " ..."
    where = f"the {app} app" if app else "an app"
    return (
        f"Excerpt from the specification of {where} "
        f"({KIND_LABELS.get(document.kind, document.kind)}):\n"
        f"{document.title}\n{body}\n\n"
        "A user request that this excerpt applies to:\n"
    )


@dataclass
class IcralmStats:
    """What scoring cost, for benchmarks and logs."""

    calls: int = 0
    cache_hits: int = 0
    latency_s: float = 0.0
    cached_latency_s: float = 0.0  # what the cache hits took when they were computed
    prompt_tokens: int = 0
    cached_tokens: int = 0
    per_call_s: list[float] = field(default_factory=list)


class IcralmKernel:
    """Scores documents through the client's continuation scoring, optionally cached on disk."""

    name = "icralm"

    def __init__(
        self,
        client: LLMClient,
        *,
        cache: ScoreCache | None = None,
        max_doc_chars: int = 2000,
        concurrency: int = 1,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.client = client
        self.cache = cache
        self.max_doc_chars = max_doc_chars
        self.stats = IcralmStats()
        self._semaphore = asyncio.Semaphore(concurrency)

    async def _score_one(self, context: str, target: str) -> float:
        model = self.client.model
        if self.cache is not None:
            cached = await asyncio.to_thread(self.cache.get, model, context, target)
            if cached is not None:
                self.stats.cache_hits += 1
                self.stats.cached_latency_s += cached.latency_s
                return cached.mean
        async with self._semaphore:
            result = await self.client.score_continuation(context, target)
        self.stats.calls += 1
        self.stats.latency_s += result.latency_s
        self.stats.per_call_s.append(result.latency_s)
        self.stats.prompt_tokens += result.usage.prompt_tokens
        self.stats.cached_tokens += result.usage.cached_tokens
        if self.cache is not None:
            await asyncio.to_thread(
                self.cache.put,
                model,
                context,
                target,
                mean=result.mean_logprob,
                n_tokens=result.n_tokens,
                latency_s=result.latency_s,
            )
        return result.mean_logprob

    async def score(self, intention: pb.Intention, documents: Sequence[Document]) -> list[float]:
        target = intention_text(intention)
        contexts = [
            icralm_context(d, app=intention.meta.app, max_doc_chars=self.max_doc_chars)
            for d in documents
        ]
        return list(await asyncio.gather(*(self._score_one(c, target) for c in contexts)))

    async def score_pairs(self, pairs: Sequence[tuple[pb.Intention, Document]]) -> list[float]:
        """Scores of (intention, document) pairs, one after the other, in the given order.

        Order pairs by document to let a local model keep each document's tokens
        in its KV cache across intentions: only the intention's tokens are then
        evaluated again.
        """
        scores: list[float] = []
        for intention, document in pairs:
            context = icralm_context(
                document, app=intention.meta.app, max_doc_chars=self.max_doc_chars
            )
            scores.append(await self._score_one(context, intention_text(intention)))
        return scores

    async def score_many(
        self, intentions: Sequence[pb.Intention], documents: Sequence[Document]
    ) -> list[list[float]]:
        """Every intention against every document, visited document by document."""
        pairs = [(i, d) for d in documents for i in intentions]
        flat = await self.score_pairs(pairs)
        n = len(intentions)
        return [[flat[j * n + i] for j in range(len(documents))] for i in range(n)]
