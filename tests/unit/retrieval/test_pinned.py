"""Pinned documents (the user's persona, the manifest's 'always' ones) join every selection."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from reag.corpus.model import Document
from reag.retrieval import (
    Retriever,
    RetrieverConfig,
    make_intention,
    pinned_addresses,
    with_pinned,
)

SALT = make_intention("Is 1.8 g salt per 100 g a red salt badge?", app="nutri", persona_id="ckd")


def test_pins_replace_the_lowest_ranked_within_the_cap() -> None:
    order = ["a", "b", "c", "d", "e", "f"]
    assert with_pinned(order, 3, ["p", "q"], 6) == ["a", "b", "c", "p", "q"]
    assert with_pinned(order, 5, ["p", "q"], 6) == ["a", "b", "c", "d", "p", "q"]
    assert with_pinned(order, 3, ["b", "p"], 3) == ["a", "b", "p"]  # b is already in: no cost
    assert with_pinned(order, 2, ["p", "q", "r"], 2) == ["p", "q"]  # pins beyond the cap drop
    assert with_pinned(order, 2, [], 6) == ["a", "b"]


def test_pinned_addresses_are_the_category_persona_then_the_always_documents(
    make_doc: Callable[..., Document],
) -> None:
    docs = [
        make_doc("ckd", "Kidney disease", kind="persona"),
        make_doc("athlete", "Runners", kind="persona"),
        dataclasses.replace(make_doc("FR-9", "Safety"), metadata={"always": True}),
        make_doc("FR-1", "Other"),
    ]
    assert pinned_addresses(docs, "ckd", persona=True, always=True) == [
        "persona/ckd",
        "requirement/FR-9",
    ]
    assert pinned_addresses(docs, "ckd", persona=False, always=True) == ["requirement/FR-9"]
    assert pinned_addresses(docs, "", persona=True, always=False) == []


async def test_the_retriever_selects_pins_after_its_ranked_choice_within_max_k(
    corpus: list[Document], make_doc: Callable[..., Document]
) -> None:
    docs = [
        *corpus,
        make_doc("ckd", "Adults with chronic kidney disease.", kind="persona"),
        dataclasses.replace(make_doc("FR-99", "Escalate emergencies."), metadata={"always": True}),
    ]
    adaptive = {"kernel": "bm25", "selection": "adaptive", "min_k": 1}
    unpinned = RetrieverConfig(**adaptive, pin_persona=False, pin_always=False)
    plain = await Retriever(unpinned).retrieve(SALT, docs)
    assert [r.document.local_id for r in plain.selected] == ["FR-2"]

    config = RetrieverConfig(**adaptive, pin_persona=True, pin_always=True, max_k=3)
    pinned = await Retriever(config).retrieve(SALT, docs)
    assert [r.document.address for r in pinned.selected] == [
        "requirement/FR-2",
        "persona/ckd",
        "requirement/FR-99",
    ]
    assert (pinned.k, pinned.buffer) == (3, 0)
    assert sorted(r.document.address for r in pinned.ranking) == sorted(d.address for d in docs)
