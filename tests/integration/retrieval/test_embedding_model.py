"""The bundled all-MiniLM-L6-v2 loads offline and ranks by meaning, not by shared words."""

from __future__ import annotations

import asyncio
import os

import numpy as np
import pytest

from reag.corpus.model import Document
from reag.retrieval import Embedder, EmbeddingKernel, make_intention
from reag.retrieval.embedding import bundled_model_dir
from reag.retrieval.intention import intention_text

pytestmark = pytest.mark.slow


def _doc(local_id: str, content: str) -> Document:
    return Document(
        app="nutri",
        kind="domain_knowledge",
        local_id=local_id,
        title=local_id,
        content=content,
        source="test",
    )


async def test_bundled_model_ranks_the_paraphrase_first() -> None:
    documents = [
        _doc("DK-A", "Images can be uploaded as JPEG or PNG files up to ten megabytes."),
        _doc("DK-B", "Eating too much sodium raises blood pressure; keep it under 2 g a day."),
        _doc("DK-C", "The interface is translated into Spanish and Chinese."),
    ]
    intention = make_intention("Will these salty crisps push up my hypertension?", app="nutri")
    kernel = EmbeddingKernel(Embedder())
    scores = await kernel.score(intention, documents)

    assert bundled_model_dir().name == "model"
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    assert max(range(3), key=lambda i: scores[i]) == 1
    assert [m.shape for m in kernel.passage_matrices(documents)] == [(1, 384)] * 3


async def test_intentions_scored_together_match_those_scored_alone() -> None:
    """Batched under load (reag.retrieval.query_batching), a cosine moves only in the last bits."""
    documents = [
        _doc("DK-A", "Images can be uploaded as JPEG or PNG files up to ten megabytes."),
        _doc("DK-B", "Eating too much sodium raises blood pressure; keep it under 2 g a day."),
        _doc("DK-C", "The interface is translated into Spanish and Chinese."),
    ]
    queries = [
        "Will these salty crisps push up my hypertension?",
        "Can I send a photo of my dinner?",
        "Does the app speak Chinese? I would like to use it with my grandmother, who reads "
        "no English, while we plan the week's meals together.",
        "ok",
    ]
    intentions = [make_intention(q, app="nutri") for q in queries]
    kernel = EmbeddingKernel(Embedder())
    alone = [kernel.cosine(intention_text(i), documents) for i in intentions]
    together = await asyncio.gather(*(kernel.score(i, documents) for i in intentions))

    assert kernel.queries.batches < len(queries)
    for a, t in zip(alone, together, strict=True):
        assert np.allclose(a, t, atol=1e-5)
        assert np.argsort(a).tolist() == np.argsort(t).tolist()
