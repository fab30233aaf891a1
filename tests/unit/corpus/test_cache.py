"""The retriever's corpus cache: one store read per app per TTL, a re-ingest seen after it."""

from __future__ import annotations

from pathlib import Path

from reag.corpus.cache import CachedCorpus
from reag.corpus.model import Document
from reag.corpus.store import CorpusStore

DOC = Document(app="demo", kind="requirement", local_id="FR-1", title="t", content="c", source="s")


def test_the_corpus_cache_rereads_the_store_after_its_ttl(tmp_path: Path) -> None:
    store = CorpusStore.open(f"sqlite:///{tmp_path / 'reag.db'}")
    store.add("demo", [DOC])
    now = [0.0]
    corpus = CachedCorpus(store, ttl_s=5, clock=lambda: now[0])
    assert corpus("demo") == [DOC]
    changed = Document(
        app="demo", kind="requirement", local_id="FR-2", title="t", content="c2", source="s"
    )
    store.add("demo", [DOC, changed])
    assert corpus("demo") == [DOC]
    now[0] = 6.0
    assert corpus("demo") == [DOC, changed]


def test_no_app_reads_nothing(tmp_path: Path) -> None:
    store = CorpusStore.open(f"sqlite:///{tmp_path / 'reag.db'}")
    store.add("demo", [DOC])
    assert CachedCorpus(store, ttl_s=5)("") == []
