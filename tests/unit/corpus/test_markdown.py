from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from reag.corpus import CorpusFileError, load_file, read_file

Write = Callable[[str, str], Path]


def test_one_document_per_level2_heading_with_ids_and_slugs(write: Write) -> None:
    path = write(
        "requirements.md",
        "# Title\nIntro text is not a document.\n\n"
        "## FR-03: Sugar flag\nFlag sugar above 22.5 g.\n### Detail\nStill FR-03.\n\n"
        "## Score card within two seconds\nShow the card fast.\n",
    )
    docs = load_file(path, "nutri")
    assert [d.address for d in docs] == [
        "requirement/FR-03",
        "requirement/score-card-within-two-seconds",
    ]
    assert docs[0].title == "Sugar flag"
    assert docs[0].content == "Flag sugar above 22.5 g.\n### Detail\nStill FR-03."
    assert docs[1].title == "Score card within two seconds"
    assert all("Intro" not in d.content for d in docs)
    assert docs[0].metadata["line"] == 4
    assert docs[0].source == str(path)


def test_front_matter_kind_wins_over_file_name_and_extra_keys_become_metadata(
    write: Write,
) -> None:
    path = write(
        "requirements.md",
        "---\nkind: personas\napp: nutri\nillustrative: true\n---\n## P1 Elderly\nAged 75.\n",
    )
    [doc] = load_file(path, "nutri")
    assert doc.address == "persona/P1"
    assert doc.metadata["illustrative"] is True
    assert "app" not in doc.metadata


def test_front_matter_for_another_app_is_refused(write: Write) -> None:
    path = write("personas.md", "---\napp: other\n---\n## P1 Elderly\nAged 75.\n")
    with pytest.raises(CorpusFileError, match="app 'other'"):
        load_file(path, "nutri")


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("requirements.md", "requirement"),
        ("user_stories.md", "user_story"),
        ("personas.md", "persona"),
        ("domain_knowledge.md", "domain_knowledge"),
        ("background.md", "background"),
        ("nfr.md", "nfr"),
        ("non_functional_requirements.md", "nfr"),
    ],
)
def test_kind_from_file_name(write: Write, name: str, kind: str) -> None:
    [doc] = load_file(write(name, "## X-1 A\nbody\n"), "nutri")
    assert doc.kind == kind


def test_unknown_file_name_without_front_matter_asks_for_it(write: Write) -> None:
    path = write("notes.md", "## A\nbody\n")
    with pytest.raises(CorpusFileError) as info:
        load_file(path, "nutri")
    assert info.value.path == str(path)
    assert "front matter" in info.value.problem


def test_kind_option_applies_when_file_declares_none(write: Write) -> None:
    [doc] = load_file(write("notes.md", "## A\nbody\n"), "nutri", kind="background")
    assert doc.address == "background/a"


def test_file_without_level2_heading_is_one_document_named_after_the_file(write: Write) -> None:
    [doc] = load_file(write("background.md", "# Product\nNutriLens reads labels.\n"), "nutri")
    assert doc.address == "background/background"
    assert doc.title == "Product"
    assert "NutriLens reads labels." in doc.content


def test_headings_inside_code_fences_do_not_split(write: Write) -> None:
    path = write("requirements.md", "## FR-1 A\n```\n## not a heading\n```\ntext\n")
    [doc] = load_file(path, "nutri")
    assert "## not a heading" in doc.content


def test_duplicate_address_skips_the_later_section_naming_both_lines(write: Write) -> None:
    path = write("requirements.md", "## FR-1 A\nx\n\n## FR-1 B\ny\n")
    loaded = read_file(path, "nutri")
    [doc] = loaded.documents
    assert (doc.title, doc.content) == ("A", "x")
    [skip] = loaded.skipped
    assert skip.line == 4
    assert "duplicate address requirement/FR-1" in skip.problem
    assert "line 1" in skip.problem
    assert str(path) in str(skip)


def test_malformed_front_matter_reports_file_and_line(write: Write) -> None:
    path = write("requirements.md", "---\nkind: [unclosed\n---\n## FR-1 A\nx\n")
    with pytest.raises(CorpusFileError) as info:
        load_file(path, "nutri")
    assert "not valid YAML" in info.value.problem
    assert info.value.line is not None
    assert str(info.value).startswith(f"{path}:")


def test_unknown_front_matter_kind_is_an_error(write: Write) -> None:
    path = write("requirements.md", "---\nkind: wishlist\n---\n## FR-1 A\nx\n")
    with pytest.raises(CorpusFileError, match="'wishlist' is not one of"):
        load_file(path, "nutri")


def test_empty_section_is_skipped_and_the_rest_kept(write: Write) -> None:
    path = write("requirements.md", "## FR-1 A\n\n## FR-2 B\nx\n## FR-3 C\n   \n## FR-4 D\ny\n")
    loaded = read_file(path, "nutri")
    assert [d.address for d in loaded.documents] == ["requirement/FR-2", "requirement/FR-4"]
    assert [(s.line, s.problem) for s in loaded.skipped] == [
        (1, "section 'FR-1 A' has no content"),
        (5, "section 'FR-3 C' has no content"),
    ]


def test_an_empty_section_does_not_claim_its_id(write: Write) -> None:
    """A stub heading left empty, then filled in further down: the filled one is kept."""
    loaded = read_file(write("requirements.md", "## FR-1 Stub\n\n## FR-1 Real\nx\n"), "nutri")
    [doc] = loaded.documents
    assert doc.title == "Real"
    assert [s.line for s in loaded.skipped] == [1]


def test_heading_without_an_id_is_skipped(write: Write) -> None:
    loaded = read_file(write("requirements.md", "## !!!\nx\n## FR-1 A\ny\n"), "nutri")
    assert [d.address for d in loaded.documents] == ["requirement/FR-1"]
    assert "has no letters or digits" in loaded.skipped[0].problem


def test_an_empty_file_is_skipped(write: Write) -> None:
    loaded = read_file(write("background.md", "\n\n"), "nutri")
    assert loaded.documents == []
    assert [s.problem for s in loaded.skipped] == ["the file has no content"]


def test_load_file_logs_skipped_sections_by_name_not_content(
    write: Write, caplog: pytest.LogCaptureFixture
) -> None:
    path = write("requirements.md", "## FR-1 A\n\n## FR-1 B\nkept body\n## FR-1 C\nsecret body\n")
    with caplog.at_level("WARNING", logger="reag.corpus"):
        docs = load_file(path, "nutri")
    assert [d.title for d in docs] == ["B"]
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2
    assert all(m.startswith(f"skipped {path}:") for m in messages)
    assert not any("body" in m for m in messages)
