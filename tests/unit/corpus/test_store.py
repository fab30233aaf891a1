from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.exc import StatementError

from reag.corpus import CorpusStore, Document, DocumentNotFoundError, DuplicateAddressError


def doc(local_id: str, content: str = "body", kind: str = "requirement") -> Document:
    return Document(
        app="nutri",
        kind=kind,  # type: ignore[arg-type]
        local_id=local_id,
        title=f"title {local_id}",
        content=content,
        source="test",
    )


@pytest.fixture
def store(tmp_path: Path) -> CorpusStore:
    return CorpusStore.open(f"sqlite:///{tmp_path / 'reag.db'}")


def test_add_list_get_by_app_kind_and_address(store: CorpusStore) -> None:
    report = store.add("nutri", [doc("FR-1"), doc("P1", kind="persona")])
    assert report.added == ["requirement/FR-1", "persona/P1"]
    assert [d.address for d in store.list("nutri")] == ["persona/P1", "requirement/FR-1"]
    assert [d.address for d in store.list("nutri", kind="persona")] == ["persona/P1"]
    assert store.get("nutri", "requirement/FR-1").title == "title FR-1"
    assert store.list("other") == []
    assert store.apps() == ["nutri"]


def test_readding_an_address_replaces_it_and_bumps_the_version(store: CorpusStore) -> None:
    store.add("nutri", [doc("FR-1", "old"), doc("FR-2")])
    before = store.version("nutri")
    report = store.add("nutri", [doc("FR-1", "new"), doc("FR-2")])
    assert report.replaced == ["requirement/FR-1"]
    assert report.unchanged == ["requirement/FR-2"]
    stored = store.get("nutri", "requirement/FR-1")
    assert stored.content == "new"
    assert stored.metadata["version"] == 2
    assert len(store.list("nutri")) == 2
    assert store.version("nutri") != before


def test_get_unknown_address_says_how_to_list(store: CorpusStore) -> None:
    with pytest.raises(DocumentNotFoundError, match="reag corpus list --app nutri"):
        store.get("nutri", "requirement/none")


def test_duplicate_address_in_one_batch_stores_nothing(store: CorpusStore) -> None:
    with pytest.raises(DuplicateAddressError):
        store.add("nutri", [doc("FR-1"), doc("FR-1", "again")])
    assert store.list("nutri") == []


def test_a_failure_mid_transaction_leaves_the_previous_corpus_intact(store: CorpusStore) -> None:
    store.add("nutri", [doc("FR-1", "original")])
    unserialisable = Document(
        app="nutri",
        kind="requirement",
        local_id="FR-9",
        title="t",
        content="c",
        source="s",
        metadata={"bad": object()},
    )
    with pytest.raises(StatementError, match="not JSON serializable"):
        store.add("nutri", [doc("FR-1", "changed"), doc("FR-2"), unserialisable])
    assert [(d.address, d.content) for d in store.list("nutri")] == [
        ("requirement/FR-1", "original")
    ]


def test_documents_of_another_app_are_refused(store: CorpusStore) -> None:
    with pytest.raises(ValueError, match="belongs to app"):
        store.add("other", [doc("FR-1")])
