from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from reag.corpus import CorpusFileError, load_file, read_file

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


def test_missing_or_empty_content_skips_the_document_by_position_and_id(write: Write) -> None:
    path = write(
        "personas.yaml",
        "documents:\n"
        "  - {id: P1, title: Elderly}\n"
        "  - {id: P2, content: '  '}\n"
        "  - {id: P3, content: Aged 30.}\n",
    )
    loaded = read_file(path, "nutri")
    assert [d.address for d in loaded.documents] == ["persona/P3"]
    assert [s.problem for s in loaded.skipped] == [
        "document #1 ('P1') has no content",
        "document #2 ('P2') has no content",
    ]


def test_document_without_any_kind_is_skipped(write: Write) -> None:
    path = write("misc.yaml", "- {id: A, content: x}\n- {id: B, kind: persona, content: y}\n")
    loaded = read_file(path, "nutri")
    assert [d.address for d in loaded.documents] == ["persona/B"]
    assert "document #1 ('A') has no kind" in loaded.skipped[0].problem


def test_invalid_fields_skip_the_document_without_echoing_its_content(write: Write) -> None:
    path = write(
        "misc.yaml",
        "- {id: A, kind: wish, content: private words}\n"
        "- {id: B, kind: persona, content: y, colour: red}\n"
        "- just a string\n"
        "- {kind: persona, content: no id here}\n"
        "- {id: C, kind: persona, content: kept}\n",
    )
    loaded = read_file(path, "nutri")
    assert [d.address for d in loaded.documents] == ["persona/C"]
    problems = [s.problem for s in loaded.skipped]
    assert len(problems) == 4
    assert problems[0].startswith("document #1 ('A') field 'kind'")
    assert "unknown kind 'wish'" in problems[0]
    assert problems[1].startswith("document #2 ('B') field 'colour'")
    assert problems[2].startswith("document #3: ")
    assert problems[3].startswith("document #4 field 'id'")
    assert not any("private" in p or "no id here" in p for p in problems)


def test_duplicate_address_in_one_file_skips_the_later(write: Write) -> None:
    path = write("personas.yaml", "- {id: P1, content: x}\n- {id: P1, content: y}\n")
    loaded = read_file(path, "nutri")
    assert [d.content for d in loaded.documents] == ["x"]
    assert [s.problem for s in loaded.skipped] == [
        "duplicate address persona/P1: documents #1 and #2"
    ]


def test_a_file_that_is_not_a_document_list_is_refused(write: Write) -> None:
    with pytest.raises(CorpusFileError, match="field 'documents'"):
        load_file(write("personas.yaml", "documents: 5\n"), "nutri")


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
