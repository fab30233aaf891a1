"""Each service's ``create_app`` wires from settings alone, with no broker or model contacted.

This is what ``python -m services.<name>`` runs; a wiring error would only
show when the embedded stack starts.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from faststream.asgi import AsgiFastStream

from reag.corpus.model import Document
from reag.corpus.store import CorpusStore
from services.elicitor.main import create_app as elicitor_app
from services.elicitor.settings import ElicitorSettings
from services.oracle.main import build_writer
from services.oracle.main import create_app as oracle_app
from services.oracle.settings import OracleSettings
from services.retriever.main import build_deps
from services.retriever.settings import RetrieverSettings

DOC = Document(app="demo", kind="requirement", local_id="FR-1", title="t", content="c", source="s")


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("REAG_STORE_DSN", "REAG_LLM_MODEL", "REAG_ORACLE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("REAG_STATE_DIR", str(tmp_path))
    # 'local:' models then go to a model server, so no weights are loaded here.
    monkeypatch.setenv("REAG_LLM_LOCAL_URL", "http://127.0.0.1:9")
    CorpusStore.open(f"sqlite:///{tmp_path / 'reag.db'}").add("demo", [DOC])
    return tmp_path


def test_the_elicitor_and_the_oracle_wire_from_the_environment(state: Path) -> None:
    assert isinstance(elicitor_app(ElicitorSettings()), AsgiFastStream)
    assert isinstance(oracle_app(OracleSettings()), AsgiFastStream)


def test_oracle_settings_reach_the_writer(state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REAG_ORACLE_ATTEMPTS", "3")
    monkeypatch.setenv("REAG_ORACLE_MAX_DOC_CHARS", "300")
    monkeypatch.setenv("REAG_ORACLE_SHOW_RESPONSE", "true")
    writer = build_writer(OracleSettings())
    assert writer.attempts == 3
    assert writer.limits.max_doc_chars == 300
    assert writer.limits.show_response is True
    assert writer.client.model == "local:qwen2.5-coder-1.5b-instruct"  # REAG_LLM_MODEL default
    assert writer.client.caller.service == "oracle"


def test_the_cheap_retriever_configuration_needs_no_model(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REAG_RETRIEVAL__KERNEL", "bm25")
    monkeypatch.setenv("REAG_SELF_REASONING", "false")
    settings = RetrieverSettings()
    deps = build_deps(settings)
    assert settings.retrieval.kernel == "bm25"
    assert deps.reasoner is None
    assert deps.retriever.icralm is None
    assert deps.documents("demo") == [DOC]
    assert deps.documents("other") == []


def test_the_default_retriever_ranks_without_a_model_and_reasons_with_one(state: Path) -> None:
    deps = build_deps(RetrieverSettings())
    assert deps.retriever.config.kernel == "rrf"
    assert deps.retriever.icralm is None
    assert deps.retriever.reranker is None
    assert deps.reasoner is not None


def test_an_icralm_kernel_gets_the_ranking_model(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REAG_RETRIEVAL__KERNEL", "hybrid")
    deps = build_deps(RetrieverSettings())
    assert deps.retriever.icralm is not None
    assert deps.retriever.icralm.client.model == "local:gemma-3-270m"


def test_rerank_n_wires_the_reranker_to_the_rerank_model(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REAG_RETRIEVAL__RERANK_N", "4")
    monkeypatch.setenv("REAG_RETRIEVAL__RERANK_MAX_S", "20")
    deps = build_deps(RetrieverSettings())
    reranker = deps.retriever.reranker
    assert reranker is not None
    assert reranker.client.model == "local:qwen2.5-coder-1.5b-instruct"
    assert reranker.client.caller.service == "retriever"
    assert (reranker.top_n, reranker.max_seconds) == (4, 20.0)
