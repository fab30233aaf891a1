"""ICRALM on the real local model: the document holding the answer outranks unrelated ones."""

from __future__ import annotations

import pytest

from reag.corpus.model import Document
from reag.llm.client import LLMClient
from reag.retrieval import Retriever, RetrieverConfig, make_intention

pytestmark = pytest.mark.llm


def _doc(local_id: str, title: str, content: str) -> Document:
    return Document(
        app="nutri",
        kind="requirement",
        local_id=local_id,
        title=title,
        content=content,
        source="test",
    )


SALT = _doc(
    "FR-08",
    "Salt and sodium flag thresholds",
    "Salt is derived from sodium as salt = sodium x 2.5. Foods with more than 1.5 g of salt "
    "per 100 g are rated high and get a red High Salt badge; users with high blood pressure "
    "see a Sodium caution badge from 0.3 g of salt per 100 g.",
)
UPLOAD = _doc(
    "FR-01",
    "Image upload formats",
    "The app accepts JPEG, PNG and HEIC photographs of up to 10 MB each. Larger images are "
    "downscaled on the device before upload. Each upload receives a scan id.",
)
LANGUAGES = _doc(
    "FR-19",
    "Languages",
    "The interface is available in English, Simplified Chinese and Spanish, and answers in "
    "the language of the question.",
)


async def test_icralm_ranks_the_answering_document_first(local_llm_client: LLMClient) -> None:
    intention = make_intention(
        "Is 1.8 g of salt per 100 g too much for my blood pressure?",
        persona_name="Hypertension",
        situation="Choosing a ready meal in the supermarket.",
        app="nutri",
    )
    retriever = Retriever(
        RetrieverConfig(kernel="icralm", selection="adaptive", buffer=0, min_k=1),
        client=local_llm_client,
    )
    retrieval = await retriever.retrieve(intention, [UPLOAD, SALT, LANGUAGES])

    ranked = [r.document.address for r in retrieval.ranking]
    assert ranked[0] == "requirement/FR-08", [
        (r.document.address, round(r.score, 3)) for r in retrieval.ranking
    ]
    assert retrieval.ranking[0].score > retrieval.ranking[1].score
    assert all(r.score < 0 for r in retrieval.ranking)  # mean log-probabilities
    assert retrieval.k == 1, [round(r.score, 3) for r in retrieval.ranking]
