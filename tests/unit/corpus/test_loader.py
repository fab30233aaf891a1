from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from reag.corpus import CorpusLoadError, load_paths

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


def test_duplicate_address_across_files_names_both(write: Write) -> None:
    first = write("requirements.md", "## FR-1 A\nx\n")
    second = write("more_requirements.md", "## FR-1 B\ny\n")
    with pytest.raises(CorpusLoadError) as info:
        load_paths([first, second], "nutri")
    [error] = info.value.errors
    assert error.path == str(second)
    assert str(first) in error.problem


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
