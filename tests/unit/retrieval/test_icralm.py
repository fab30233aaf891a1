from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from reag.corpus.model import Document
from reag.llm.client import LLMClient
from reag.llm.scripted import FakeProvider
from reag.retrieval import (
    IcralmKernel,
    Retriever,
    RetrieverConfig,
    ScoreCache,
    icralm_context,
    intention_text,
    make_intention,
)
from reag.v1 import events_pb2 as pb

ScoreScript = Callable[[str, str], list[float]]


def sugar_intention() -> pb.Intention:
    return make_intention(
        "Is 30 g of sugar per 100 g too much?",
        persona_name="Type 2 diabetes",
        situation="Buying breakfast cereal.",
        app="nutri",
    )


async def test_icralm_scores_the_mean_logprob_of_the_intention_given_task_and_document(
    corpus: list[Document], overlap_logprobs: ScoreScript
) -> None:
    provider = FakeProvider(score_script=overlap_logprobs)
    kernel = IcralmKernel(LLMClient(provider))
    intention = sugar_intention()
    scores = await kernel.score(intention, corpus)

    assert len(provider.calls) == len(corpus)
    context, target = provider.calls[0].payload
    assert target == intention_text(intention)
    assert context == icralm_context(corpus[0], app="nutri")
    assert corpus[0].content in context
    assert context.rstrip().endswith("A user request that this excerpt applies to:")
    expected = overlap_logprobs(context, target)
    assert scores[0] == sum(expected) / len(expected)


async def test_the_document_sharing_the_intentions_words_ranks_first(
    corpus: list[Document], overlap_logprobs: ScoreScript
) -> None:
    client = LLMClient(FakeProvider(score_script=overlap_logprobs))
    retriever = Retriever(RetrieverConfig(kernel="icralm", buffer=1), client=client)
    retrieval = await retriever.retrieve(sugar_intention(), corpus)

    assert retrieval.ranking[0].document.address == "requirement/FR-1"
    assert [r.rank for r in retrieval.ranking] == [1, 2, 3, 4, 5]
    scores = [r.score for r in retrieval.ranking]
    assert scores == sorted(scores, reverse=True)
    assert retrieval.kernel == "icralm"
    assert retrieval.n_candidates == len(corpus)
    assert len(retrieval.selected) == retrieval.k + retrieval.buffer


def test_long_documents_are_clipped_in_the_context(make_doc: Callable[..., Document]) -> None:
    long_doc = make_doc("FR-9", "word " * 1000)
    context = icralm_context(long_doc, max_doc_chars=200)
    assert len(context) < 400
    assert context.count("word") <= 41


async def test_cached_scores_are_not_recomputed(
    tmp_path: Path, corpus: list[Document], overlap_logprobs: ScoreScript
) -> None:
    cache = ScoreCache(tmp_path / "scores.sqlite")
    provider = FakeProvider(score_script=overlap_logprobs)
    first = await IcralmKernel(LLMClient(provider), cache=cache).score(sugar_intention(), corpus)
    calls_after_first = len(provider.calls)

    reopened = ScoreCache(tmp_path / "scores.sqlite")
    kernel = IcralmKernel(LLMClient(provider), cache=reopened)
    second = await kernel.score(sugar_intention(), corpus)
    assert second == first
    assert len(provider.calls) == calls_after_first
    assert kernel.stats.cache_hits == len(corpus)


async def test_score_many_visits_documents_in_the_outer_loop(
    corpus: list[Document], overlap_logprobs: ScoreScript
) -> None:
    provider = FakeProvider(score_script=overlap_logprobs)
    kernel = IcralmKernel(LLMClient(provider))
    intentions = [sugar_intention(), make_intention("How much salt is too much?", app="nutri")]
    many = await kernel.score_many(intentions, corpus)

    contexts = [call.payload[0] for call in provider.calls]
    assert contexts[0] == contexts[1]  # one document for both intentions, back to back
    assert contexts[1] != contexts[2]
    single = IcralmKernel(LLMClient(FakeProvider(score_script=overlap_logprobs)))
    for i, intention in enumerate(intentions):
        assert many[i] == await single.score(intention, corpus)


def test_a_cache_file_without_latencies_is_upgraded(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE scores (key TEXT PRIMARY KEY, mean REAL NOT NULL, n_tokens INTEGER)")
    db.commit()
    db.close()
    cache = ScoreCache(path)
    cache.put("m", "c", "t", mean=-1.5, n_tokens=3, latency_s=0.2)
    entry = cache.get("m", "c", "t")
    assert entry is not None
    assert (entry.mean, entry.latency_s) == (-1.5, 0.2)
