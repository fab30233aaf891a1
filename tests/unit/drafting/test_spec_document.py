from __future__ import annotations

import csv
import io

import pytest

from reag.drafting.document import (
    NOT_SPECIFIED,
    SrsDocument,
    csv_top_level_texts,
    parse_markdown_sections,
    read_csv_rows,
    top_level_texts,
)
from reag.drafting.errors import DocumentFormatError
from reag.drafting.template import load_template


def filled(template_name: str = "ieee830") -> SrsDocument:
    template = load_template(template_name)
    document = SrsDocument(template, "NutriLens")
    for leaf in template.leaves():
        document.set_text(leaf.number, f"Text of {leaf.number}, with a comma.")
    return document


def test_not_specified_is_recognised_and_counts_as_filled() -> None:
    document = SrsDocument(load_template("ieee830"), "x")
    document.set_text("2.6", "(Not specified.)")
    document.set_text("1.1", "not specified - nothing in the report")
    assert document.text("2.6") == NOT_SPECIFIED
    assert document.is_not_specified("1.1")
    assert document.is_filled("2.6")
    # A sentence that merely mentions the words is content, not the marker.
    document.set_text(
        "1.2", "Behaviour when data is missing.\nNot specified values are shown as -."
    )
    assert not document.is_not_specified("1.2")


def test_blank_and_punctuation_only_text_is_unfilled() -> None:
    document = SrsDocument(load_template("ieee830"), "x")
    document.set_text("1.1", "  \n ")
    document.set_text("1.2", "--- ...")
    unfilled = {leaf.number for leaf in document.unfilled()}
    assert {"1.1", "1.2", "1.3"} <= unfilled
    assert len(unfilled) == 24


def test_headings_inside_section_text_are_flattened() -> None:
    document = SrsDocument(load_template("ieee830"), "x")
    document.set_text("1.1", "### 1.1 Purpose\nThe app rates labels.\n## 2 Overall")
    assert document.text("1.1") == "1.1 Purpose\nThe app rates labels.\n2 Overall"


@pytest.mark.parametrize("name", ["ieee830", "ieee29148"])
def test_markdown_round_trip_keeps_every_section(name: str) -> None:
    document = filled(name)
    markdown = document.to_markdown()
    back = SrsDocument.from_markdown(markdown, document.template)
    assert back.title == "NutriLens"
    for leaf in document.template.leaves():
        assert back.text(leaf.number) == document.text(leaf.number)
        assert f"{leaf.label}\n" in markdown


@pytest.mark.parametrize("name", ["ieee830", "ieee29148"])
def test_csv_is_section_subsection_content(name: str) -> None:
    document = filled(name)
    rows = list(csv.DictReader(io.StringIO(document.to_csv())))
    assert list(rows[0]) == ["section", "subsection", "content"]
    assert len(rows) == len(document.template.leaves())
    tops = {s.label for s in document.template.sections}
    assert {row["section"] for row in rows} == tops
    first = rows[0]
    assert first["section"] == "1 Introduction"
    assert first["subsection"] == "1.1 Purpose"
    assert first["content"] == "Text of 1.1, with a comma."
    assert read_csv_rows(document.to_csv())[0].content == "Text of 1.1, with a comma."


def test_csv_reader_rejects_a_wrong_header_naming_the_file() -> None:
    with pytest.raises(DocumentFormatError, match=r"srs\.csv.*section,subsection,content"):
        read_csv_rows("title,text\na,b\n", "srs.csv")


def test_top_level_texts_merge_subsections_in_order() -> None:
    markdown = filled().to_markdown()
    tops = top_level_texts(parse_markdown_sections(markdown))
    assert list(tops) == ["1", "2", "3"]
    label, body = tops["1"]
    assert label == "1 Introduction"
    assert body.index("Text of 1.1") < body.index("Text of 1.5")
    from_csv = csv_top_level_texts(read_csv_rows(filled().to_csv()))
    assert from_csv["3"][1] == tops["3"][1]


def test_markdown_numbers_with_trailing_dots_are_read() -> None:
    sections = parse_markdown_sections("# Title\n\n## 1. Purpose\n\nWhy.\n\n### 1.1 Goals\nGo.\n")
    assert [(s.number, s.title, s.body) for s in sections] == [
        ("1", "Purpose", "Why."),
        ("1.1", "Goals", "Go."),
    ]
