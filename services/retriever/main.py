"""Wiring of the retriever: corpus store, LLM clients, ranking kernels, self-reasoning."""

from __future__ import annotations

from faststream.asgi import AsgiFastStream

from reag.corpus.cache import CachedCorpus
from reag.corpus.store import CorpusStore
from reag.llm import Caller
from reag.retrieval.reasoning import SelfReasoner
from reag.retrieval.retriever import Retriever
from reag.retrieval.score_cache import ScoreCache
from services.kit.app import make_app
from services.retriever.handlers import RetrieverDeps, build_router
from services.retriever.settings import RetrieverSettings


def build_deps(settings: RetrieverSettings) -> RetrieverDeps:
    from reag.llm.registry import make_client

    config = settings.retrieval
    caller = Caller(service="retriever")
    ranking_client = rerank_client = None
    if config.needs_llm:
        ranking_client = make_client(settings.ranking_model, caller=caller)
    if config.rerank_n:
        rerank_client = make_client(settings.rerank_model, caller=caller)
    retriever = Retriever(
        config,
        client=ranking_client,
        score_cache=ScoreCache(settings.cache_dir() / "icralm.sqlite")
        if settings.score_cache and (ranking_client or rerank_client) is not None
        else None,
        embedding_cache_dir=settings.cache_dir() / "embeddings",
        rerank_client=rerank_client,
    )
    reasoner = None
    if settings.self_reasoning:
        reasoner = SelfReasoner(
            make_client(settings.reasoning_model, caller=Caller(service="retriever")),
            max_evidence=settings.max_evidence,
            concurrency=settings.reasoning_concurrency,
            max_tokens=settings.reasoning_max_tokens,
        )
    store = CorpusStore.open(settings.resolved_store_dsn())
    return RetrieverDeps(retriever, reasoner, CachedCorpus(store, settings.corpus_cache_s))


def create_app(settings: RetrieverSettings | None = None) -> AsgiFastStream:
    settings = settings or RetrieverSettings()
    return make_app("retriever", settings, [build_router(settings, build_deps(settings))])
