"""A small handmade corpus and fakes for retrieval tests (mechanics only, never results).

Helpers are fixtures because the suite imports test modules in importlib mode,
where a test cannot import a sibling helper module.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
import pytest

from reag.corpus.model import Document, DocumentKind

MakeDoc = Callable[..., Document]
ScoreScript = Callable[[str, str], list[float]]


def _make_doc(local_id: str, content: str, kind: DocumentKind = "requirement") -> Document:
    return Document(
        app="nutri",
        kind=kind,
        local_id=local_id,
        title=f"Title {local_id}",
        content=content,
        source="test",
    )


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9.]+", text.lower()))


def _overlap_logprobs(context: str, target: str) -> list[float]:
    """A fake language model: target words that occur in the context are likely."""
    seen = _words(context)
    return [-0.5 if w in seen else -4.0 for w in re.findall(r"[a-z0-9.]+", target.lower())]


class BagOfWordsEmbedder:
    """Stands in for MiniLM: a hashed bag of words, L2-normalised; records what it encoded."""

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.encoded.extend(texts)
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _words(text):
                out[row, sum(map(ord, word)) % 64] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.where(norms == 0, 1.0, norms)).astype(np.float32)


@pytest.fixture
def make_doc() -> MakeDoc:
    return _make_doc


@pytest.fixture
def overlap_logprobs() -> ScoreScript:
    return _overlap_logprobs


@pytest.fixture
def bag_embedder() -> BagOfWordsEmbedder:
    return BagOfWordsEmbedder()


@pytest.fixture
def corpus() -> list[Document]:
    return [
        _make_doc("FR-1", "The app flags sugar above 22.5 g per 100 g with a red badge."),
        _make_doc("FR-2", "Salt above 1.5 g per 100 g gets a red salt badge."),
        _make_doc("FR-3", "The score card appears within three seconds of upload."),
        _make_doc("P1", "Older adult, lives alone, prefers short answers.", "persona"),
        _make_doc("DK-1", "WHO suggests free sugars below 25 g a day.", "domain_knowledge"),
    ]
