from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from reag.corpus import CorpusLoadError, load_paths, read_sources

Write = Callable[[str, str], Path]


def test_folder_expands_to_supported_files(write: Write, tmp_path: Path) -> None:
    write("corpus/requirements.md", "## FR-1 A\nx\n")
    write("corpus/personas.yaml", "- {id: P1, content: y}\n")
    write("corpus/README.txt", "ignored")
    docs = load_paths([tmp_path / "corpus"], "nutri")
    assert sorted(d.address for d in docs) == ["persona/P1", "requirement/FR-1"]


def test_every_bad_file_is_reported_and_nothing_returned(write: Write) -> None:
    good = write("requirements.md", "## FR-1 A\nx\n")
    bad_csv = write("srs.csv", "a,b\n1,2\n")
    bad_yaml = write("personas.yaml", "- {id: [\n")
    with pytest.raises(CorpusLoadError) as info:
        load_paths([good, bad_csv, bad_yaml], "nutri")
    assert {e.path for e in info.value.errors} == {str(bad_csv), str(bad_yaml)}
    assert "nothing was ingested" in str(info.value)


def test_duplicate_address_across_files_keeps_the_first_and_names_it(write: Write) -> None:
    first = write("requirements.md", "## FR-1 A\nx\n")
    second = write("more_requirements.md", "## FR-2 B\ny\n\n## FR-1 C\nz\n")
    loaded = read_sources([(first, None), (second, None)], "nutri")
    assert [(d.address, d.content) for d in loaded.documents] == [
        ("requirement/FR-1", "x"),
        ("requirement/FR-2", "y"),
    ]
    [skip] = loaded.skipped
    assert (skip.path, skip.line) == (str(second), 4)
    assert str(first) in skip.problem


def test_bad_rows_cost_the_row_and_the_load_carries_what_was_skipped(write: Write) -> None:
    md = write("requirements.md", "## FR-1 A\n\n## FR-2 B\nx\n")
    csv = write("srs.csv", "section,subsection,content\nScope,S,Body.\nWishlist,W-1,pony\n")
    yaml = write("personas.yaml", "- {id: P1}\n- {id: P2, content: y}\n")
    loaded = read_sources([(md, None), (csv, None), (yaml, None)], "nutri")
    assert sorted(d.address for d in loaded.documents) == [
        "background/s",
        "persona/P2",
        "requirement/FR-2",
    ]
    assert [(s.path, s.line) for s in loaded.skipped] == [
        (str(md), 1),
        (str(csv), 3),
        (str(yaml), None),
    ]


def test_strict_refuses_a_load_with_any_skipped_part(write: Write) -> None:
    md = write("requirements.md", "## FR-1 A\n\n## FR-2 B\nx\n")
    with pytest.raises(CorpusLoadError) as info:
        read_sources([(md, None)], "nutri", strict=True)
    [error] = info.value.errors
    assert (error.path, error.line) == (str(md), 1)
    assert "has no content" in error.problem


def test_nothing_left_after_skipping_is_refused_with_every_reason(write: Write) -> None:
    md = write("requirements.md", "## FR-1 A\n\n## FR-2 B\n")
    with pytest.raises(CorpusLoadError) as info:
        read_sources([(md, None)], "nutri")
    assert "no document left to ingest" in info.value.errors[0].problem
    assert [s.line for s in info.value.skipped] == [1, 3]
    assert "nothing was ingested" in str(info.value)
    assert "section 'FR-2 B' has no content" in str(info.value)


def test_a_bad_file_still_refuses_everything_and_reports_the_skips_too(write: Write) -> None:
    good = write("requirements.md", "## FR-1 A\nx\n\n## FR-2 B\n")
    bad = write("srs.csv", "heading,text\nA,B\n")
    with pytest.raises(CorpusLoadError) as info:
        read_sources([(good, None), (bad, None)], "nutri")
    assert [e.path for e in info.value.errors] == [str(bad)]
    assert [s.line for s in info.value.skipped] == [4]


def test_missing_and_unsupported_files(tmp_path: Path, write: Write) -> None:
    odd = write("notes.docx", "x")
    with pytest.raises(CorpusLoadError) as info:
        load_paths([tmp_path / "absent.md", odd], "nutri")
    problems = [e.problem for e in info.value.errors]
    assert problems[0] == "no such file"
    assert "unsupported file type '.docx'" in problems[1]


def test_non_utf8_file_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "requirements.md"
    path.write_bytes(b"## FR-1 A\n\xff\xfe bad\n")
    with pytest.raises(CorpusLoadError, match="not UTF-8"):
        load_paths([path], "nutri")
