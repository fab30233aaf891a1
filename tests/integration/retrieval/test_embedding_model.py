"""The bundled all-MiniLM-L6-v2 loads offline and ranks by meaning, not by shared words."""

from __future__ import annotations

import os

import pytest

from reag.corpus.model import Document
from reag.retrieval import Embedder, EmbeddingKernel, make_intention
from reag.retrieval.embedding import bundled_model_dir

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
