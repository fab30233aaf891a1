from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reag.corpus.model import Document
from reag.llm.client import LLMClient
from reag.llm.scripted import FakeProvider
from reag.retrieval import (
    Bm25Kernel,
    EmbeddingKernel,
    Retriever,
    RetrieverConfig,
    RetrieverConfigError,
    make_intention,
)

ScoreScript = Callable[[str, str], list[float]]

SALT = make_intention("Is 1.8 g salt per 100 g a red salt badge?", app="nutri")


async def test_bm25_ranks_the_lexically_matching_document_first(corpus: list[Document]) -> None:
    scores = await Bm25Kernel().score(SALT, corpus)
    assert max(range(len(corpus)), key=lambda i: scores[i]) == 1  # FR-2, the salt badge


async def test_embedding_kernel_encodes_each_document_once_per_version(
    corpus: list[Document], bag_embedder: Any, make_doc: Callable[..., Document]
) -> None:
    kernel = EmbeddingKernel(bag_embedder)
    scores = await kernel.score(SALT, corpus)
    assert max(range(len(corpus)), key=lambda i: scores[i]) == 1
    assert all(-1.0 - 1e-6 <= s <= 1.0 + 1e-6 for s in scores)
    encoded_once = len(bag_embedder.encoded)
    assert encoded_once == len(corpus) + 1

    await kernel.score(SALT, corpus)
    assert len(bag_embedder.encoded) == encoded_once + 1  # only the intention again

    changed = [*corpus[:-1], make_doc("DK-1", "Potassium matters in kidney disease.")]
    await kernel.score(SALT, changed)
    assert bag_embedder.encoded[-2] == changed[-1].text  # the new version, and only it


def test_embedding_cache_survives_a_restart(
    tmp_path: Path, corpus: list[Document], bag_embedder: Any
) -> None:
    EmbeddingKernel(bag_embedder, cache_dir=tmp_path).passage_matrices(corpus)
    assert list(tmp_path.glob("nutri-*.npz"))
    fresh = type(bag_embedder)()
    EmbeddingKernel(fresh, cache_dir=tmp_path).passage_matrices(corpus)
    assert fresh.encoded == []


async def test_prefilter_hands_only_the_top_n_to_icralm(
    corpus: list[Document], bag_embedder: Any, overlap_logprobs: ScoreScript
) -> None:
    provider = FakeProvider(score_script=overlap_logprobs)
    retriever = Retriever(
        RetrieverConfig(kernel="embedding+icralm", prefilter_n=2),
        client=LLMClient(provider),
        embedder=bag_embedder,
    )
    retrieval = await retriever.retrieve(SALT, corpus)
    assert len(provider.calls) == 2
    assert retrieval.n_candidates == 2
    assert retrieval.ranking[0].document.address == "requirement/FR-2"


async def test_hybrid_scores_are_a_weighted_sum_of_z_scores(
    corpus: list[Document], bag_embedder: Any, overlap_logprobs: ScoreScript
) -> None:
    client = LLMClient(FakeProvider(score_script=overlap_logprobs))
    config = RetrieverConfig(kernel="hybrid", prefilter_n=5, fusion_weight=0.5)
    retrieval = await Retriever(config, client=client, embedder=bag_embedder).retrieve(SALT, corpus)
    scores = [r.score for r in retrieval.ranking]
    assert sum(scores) == pytest.approx(0.0, abs=1e-9)  # z-scores of each kernel sum to 0
    assert retrieval.ranking[0].document.address == "requirement/FR-2"


async def test_fixed_selection_keeps_exactly_k(corpus: list[Document]) -> None:
    retriever = Retriever(RetrieverConfig(kernel="bm25", selection="fixed", k=3))
    retrieval = await retriever.retrieve(SALT, corpus)
    assert (retrieval.k, retrieval.buffer, len(retrieval.selected)) == (3, 0, 3)


async def test_adaptive_selection_cuts_at_the_gap(corpus: list[Document]) -> None:
    config = RetrieverConfig(kernel="bm25", selection="adaptive", buffer=1, min_k=1)
    retrieval = await Retriever(config).retrieve(SALT, corpus)
    scores = [r.score for r in retrieval.ranking]
    gaps = [scores[i] - scores[i + 1] for i in range(len(scores) - 1)]
    window = gaps[:3]  # ceil(0.5 * 5) = 3 positions searched
    assert retrieval.k == window.index(max(window)) + 1
    assert len(retrieval.selected) == retrieval.k + 1


async def test_adaptive_selection_from_min_k_1_keeps_one_clear_winner_alone(
    corpus: list[Document],
) -> None:
    config = RetrieverConfig(kernel="bm25", selection="adaptive", min_k=1, buffer=0)
    retrieval = await Retriever(config).retrieve(SALT, corpus)
    assert (retrieval.k, retrieval.buffer) == (1, 0)
    assert [r.document.local_id for r in retrieval.selected] == ["FR-2"]


async def test_min_k_and_buffer_still_widen_the_selection(corpus: list[Document]) -> None:
    config = RetrieverConfig(kernel="bm25", selection="adaptive", min_k=3, buffer=1)
    retrieval = await Retriever(config).retrieve(SALT, corpus)
    assert retrieval.k >= 3
    assert retrieval.buffer == 1


def test_min_k_above_max_k_is_refused() -> None:
    with pytest.raises(ValueError, match="min_k"):
        RetrieverConfig(min_k=5, max_k=3)


def test_llm_kernels_need_a_client() -> None:
    with pytest.raises(RetrieverConfigError, match="pass an LLMClient"):
        Retriever(RetrieverConfig(kernel="icralm"))


def test_unknown_kernel_is_refused() -> None:
    with pytest.raises(ValueError, match="kernel"):
        RetrieverConfig.model_validate({"kernel": "magic"})


def test_the_default_keeps_six_documents_of_bm25_and_embedding_fused_with_pins() -> None:
    """Issue 24's default: recall for the oracle, at most 6 documents, no language model."""
    config = RetrieverConfig()
    assert (config.kernel, config.rrf_kernels, config.selection) == (
        "rrf",
        ("bm25", "embedding"),
        "fixed",
    )
    assert (config.k, config.max_k, config.buffer) == (6, 6, 0)
    assert config.pin_persona
    assert config.pin_always
    assert not config.needs_llm
