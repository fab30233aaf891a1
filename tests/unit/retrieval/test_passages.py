"""Best-passage embedding: long documents are read in model-sized windows, short ones whole."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from reag.corpus.model import Document
from reag.retrieval import EmbeddingKernel, make_intention
from reag.retrieval.embedding import passages

FILLER = " ".join(f"packaging{i}" for i in range(300))  # words that match no query


def test_a_short_document_is_one_passage_its_whole_text(make_doc: Callable[..., Document]) -> None:
    doc = make_doc("FR-1", "Salt above 1.5 g per 100 g gets a red salt badge.")
    assert passages(doc, 128) == [doc.text]


def test_windows_overlap_by_half_cover_every_word_and_carry_the_title(
    make_doc: Callable[..., Document],
) -> None:
    words = [f"w{i}" for i in range(300)]
    doc = make_doc("SEC-9", " ".join(words))
    parts = passages(doc, 100)
    assert len(parts) == 5  # starts 0, 50, 100, 150, 200; the last reaches word 299
    assert all(p.startswith(f"{doc.title}\n") for p in parts)
    bodies = [p.split("\n", 1)[1].split() for p in parts]
    assert all(len(b) <= 100 for b in bodies)
    assert bodies[1][0] == "w50"
    assert bodies[0][50] == "w50"
    assert {w for b in bodies for w in b} == set(words)


def test_zero_words_per_passage_keeps_the_document_whole(
    make_doc: Callable[..., Document],
) -> None:
    doc = make_doc("SEC-9", FILLER)
    assert passages(doc, 0) == [doc.text]


async def test_a_fact_deep_in_a_long_document_is_found_by_its_passage(
    make_doc: Callable[..., Document], bag_embedder: Any
) -> None:
    """Whole-document vectors dilute a late paragraph; the best passage does not."""
    deep = make_doc("SEC-1", f"{FILLER} salt badge red above 1.5 g per 100 g")
    decoy = make_doc("SEC-2", "badge colours for the sugar score card and the fibre score")
    intention = make_intention("red salt badge above 1.5 g", app="nutri")
    best = await EmbeddingKernel(bag_embedder, passage_words=64).score(intention, [deep, decoy])
    whole = await EmbeddingKernel(bag_embedder, passage_words=0).score(intention, [deep, decoy])
    assert best[0] > best[1]
    assert whole[0] < whole[1]


def test_each_passage_size_has_its_own_disk_cache(
    tmp_path: Path, make_doc: Callable[..., Document], bag_embedder: Any
) -> None:
    doc = make_doc("SEC-1", FILLER)
    [matrix] = EmbeddingKernel(bag_embedder, cache_dir=tmp_path, passage_words=64).passage_matrices(
        [doc]
    )
    assert matrix.shape[0] == len(passages(doc, 64)) > 1
    [whole] = EmbeddingKernel(bag_embedder, cache_dir=tmp_path, passage_words=0).passage_matrices(
        [doc]
    )
    assert whole.shape[0] == 1
    assert len(list(tmp_path.glob("nutri-*.npz"))) == 2
