from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from reag.corpus import CorpusFileError, load_file, read_file

Write = Callable[[str, str], Path]


def test_rows_become_typed_documents_and_same_subsection_merges(write: Write) -> None:
    path = write(
        "srs.csv",
        "section,subsection,content\n"
        "Functional Requirements,FR-01 Label capture,Take a photo of the label.\n"
        "User Personas,Elderly shopper,Aged 78 and lives alone.\n"
        'Functional Requirements,FR-01 Label capture,"Up to three images, 10 MB each."\n'
        "Non-Functional,NFR-2 Latency,Score card within 3 s.\n",
    )
    docs = {d.address: d for d in load_file(path, "nutri")}
    assert set(docs) == {"requirement/FR-01", "persona/elderly-shopper", "nfr/NFR-2"}
    fr = docs["requirement/FR-01"]
    assert fr.title == "Label capture"
    assert fr.content == "Take a photo of the label.\n\nUp to three images, 10 MB each."
    assert fr.metadata["rows"] == [2, 4]


@pytest.mark.parametrize(
    ("section", "kind"),
    [
        ("3.1 External Interface Requirements", "requirement"),
        ("3.2 Functional Requirements", "requirement"),
        ("3.3 Performance Requirements", "nfr"),
        ("3.6 Software System Attributes", "nfr"),
        ("2.3 User Characteristics", "persona"),
        ("1.2 Scope", "background"),
        ("2.1 Product Perspective", "background"),
        ("Domain Knowledge", "domain_knowledge"),
        ("4. User Stories", "user_story"),
        ("Security", "nfr"),
        ("Introduction", "background"),
    ],
)
def test_ieee_and_iso_section_titles_map_to_kinds(write: Write, section: str, kind: str) -> None:
    path = write("srs.csv", f'section,subsection,content\n"{section}",X-1 Thing,Body.\n')
    [doc] = load_file(path, "nutri")
    assert doc.kind == kind


def test_row_without_subsection_takes_its_id_from_the_section(write: Write) -> None:
    path = write("srs.csv", "section,subsection,content\nPurpose,,Why the app exists.\n")
    [doc] = load_file(path, "nutri")
    assert doc.address == "background/purpose"


def test_bad_header_names_file_and_expected_columns(write: Write) -> None:
    path = write("srs.csv", "heading,text\nA,B\n")
    with pytest.raises(CorpusFileError) as info:
        load_file(path, "nutri")
    assert info.value.path == str(path)
    assert "bad CSV header" in info.value.problem
    assert "section,subsection,content" in info.value.problem


def test_unknown_section_skips_the_row_and_keeps_the_others(write: Write) -> None:
    path = write(
        "srs.csv",
        "section,subsection,content\nFunctional Requirements,FR-1 A,x\nWishlist,W-1 Pony,y\n",
    )
    loaded = read_file(path, "nutri")
    assert [d.address for d in loaded.documents] == ["requirement/FR-1"]
    [skip] = loaded.skipped
    assert skip.line == 3
    assert "unknown section 'Wishlist'" in skip.problem
    assert str(skip).startswith(f"{path}:3:")


def test_empty_content_skips_the_row_naming_it_not_its_neighbours(write: Write) -> None:
    """An SRS export's empty section costs that row; the warning names it by line and title."""
    path = write(
        "srs.csv",
        "section,subsection,content\n"
        "Functional Requirements,FR-1 Upload,Photos of the label.\n"
        "Functional Requirements,FR-2 Flags,\n"
        "Functional Requirements,FR-1 Upload,   \n"
        "Purpose,,\n"
        ",,\n"
        "Functional Requirements,FR-3 Scan,Barcodes.\n",
    )
    loaded = read_file(path, "nutri")
    assert [d.address for d in loaded.documents] == ["requirement/FR-1", "requirement/FR-3"]
    assert loaded.documents[0].metadata["rows"] == [2]
    assert [(s.line, s.problem) for s in loaded.skipped] == [
        (3, "row of subsection 'FR-2 Flags' of section 'Functional Requirements' has no content"),
        (4, "row of subsection 'FR-1 Upload' of section 'Functional Requirements' has no content"),
        (5, "row of section 'Purpose' has no content"),
    ]


def test_two_subsections_with_one_id_skip_the_later_row(write: Write) -> None:
    path = write(
        "srs.csv",
        "section,subsection,content\n"
        "Functional Requirements,FR-1 Upload,x\n"
        "Functional Requirements,FR-1 Scan,y\n",
    )
    loaded = read_file(path, "nutri")
    [doc] = loaded.documents
    assert (doc.title, doc.content) == ("Upload", "x")
    [skip] = loaded.skipped
    assert skip.line == 3
    assert "duplicate address requirement/FR-1" in skip.problem
    assert "(row 2)" in skip.problem


def test_row_with_too_many_fields_is_skipped_without_echoing_it(write: Write) -> None:
    path = write(
        "srs.csv", "section,subsection,content\nPurpose,P,secret text,extra\nScope,S,Body.\n"
    )
    loaded = read_file(path, "nutri")
    assert [d.address for d in loaded.documents] == ["background/s"]
    [skip] = loaded.skipped
    assert "more fields than the header" in skip.problem
    assert "secret" not in str(skip)


def test_row_without_section_is_skipped(write: Write) -> None:
    path = write("srs.csv", "section,subsection,content\n,FR-1 A,x\nScope,S,Body.\n")
    [skip] = read_file(path, "nutri").skipped
    assert skip.problem == "row 'FR-1 A' has no section"


def test_header_only_file_is_skipped_not_refused(write: Write) -> None:
    loaded = read_file(write("srs.csv", "section,subsection,content\n"), "nutri")
    assert loaded.documents == []
    assert [s.problem for s in loaded.skipped] == ["the CSV has a header but no rows"]


def test_unparseable_csv_still_refuses_the_file(write: Write) -> None:
    # A field past csv.field_size_limit(): the reader cannot find where the next row starts.
    path = write("srs.csv", f"section,subsection,content\nScope,S,{'x' * 200_000}\n")
    with pytest.raises(CorpusFileError, match="unreadable CSV"):
        load_file(path, "nutri")
