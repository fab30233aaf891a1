from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from reag.corpus import CorpusFileError, load_file

Write = Callable[[str, str], Path]


def test_yaml_mapping_with_file_kind_and_per_document_override(write: Write) -> None:
    path = write(
        "corpus.yaml",
        "kind: persona\n"
        "documents:\n"
        "  - {id: P1, title: Elderly, content: Aged 78., metadata: {age: 78}}\n"
        "  - {id: DK-1, kind: domain knowledge, title: Salt, content: Under 5 g a day.}\n",
    )
    docs = load_file(path, "nutri")
    assert [d.address for d in docs] == ["persona/P1", "domain_knowledge/DK-1"]
    assert docs[0].metadata == {"age": 78}


def test_json_top_level_list(write: Write) -> None:
    path = write(
        "docs.json",
        '[{"id": "FR-1", "kind": "requirement", "title": "Upload", "content": "Photos."}]',
    )
    [doc] = load_file(path, "nutri")
    assert doc.address == "requirement/FR-1"
    assert doc.title == "Upload"


def test_malformed_yaml_names_file_and_line(write: Write) -> None:
    path = write("corpus.yaml", "kind: persona\ndocuments:\n  - {id: P1, content: [oops\n")
    with pytest.raises(CorpusFileError) as info:
        load_file(path, "nutri")
    assert "malformed YAML" in info.value.problem
    assert info.value.line is not None
    assert info.value.path == str(path)


def test_malformed_json_names_line(write: Write) -> None:
    path = write("docs.json", '{"documents": [\n{"id": "A",}\n]}')
    with pytest.raises(CorpusFileError, match="malformed JSON") as info:
        load_file(path, "nutri")
    assert info.value.line == 2


def test_missing_content_names_the_document(write: Write) -> None:
    path = write("personas.yaml", "documents:\n  - {id: P1, title: Elderly}\n")
    with pytest.raises(CorpusFileError, match="document #1 field 'content'"):
        load_file(path, "nutri")


def test_document_without_any_kind_is_an_error(write: Write) -> None:
    path = write("misc.yaml", "- {id: A, content: x}\n")
    with pytest.raises(CorpusFileError, match="has no kind"):
        load_file(path, "nutri")


def test_unknown_kind_is_an_error(write: Write) -> None:
    path = write("misc.yaml", "- {id: A, kind: wish, content: x}\n")
    with pytest.raises(CorpusFileError, match="unknown kind 'wish'"):
        load_file(path, "nutri")


def test_duplicate_address_in_one_file(write: Write) -> None:
    path = write("personas.yaml", "- {id: P1, content: x}\n- {id: P1, content: y}\n")
    with pytest.raises(CorpusFileError, match=r"duplicate address persona/P1: documents #1 and #2"):
        load_file(path, "nutri")


def test_file_level_keys_become_metadata_and_app_is_checked(write: Write) -> None:
    path = write(
        "personas.yaml",
        "kind: persona\napp: nutri\nillustrative: true\n"
        "documents:\n  - {id: P1, content: x, metadata: {age: 70}}\n",
    )
    [doc] = load_file(path, "nutri")
    assert doc.metadata == {"illustrative": True, "age": 70}
    with pytest.raises(CorpusFileError, match="says app 'nutri'"):
        load_file(path, "other")
