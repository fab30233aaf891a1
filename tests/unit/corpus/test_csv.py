from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from reag.corpus import CorpusFileError, load_file

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


def test_unknown_section_names_the_row(write: Write) -> None:
    path = write(
        "srs.csv",
        "section,subsection,content\nFunctional Requirements,FR-1 A,x\nWishlist,W-1 Pony,y\n",
    )
    with pytest.raises(CorpusFileError) as info:
        load_file(path, "nutri")
    assert info.value.line == 3
    assert "unknown section 'Wishlist'" in info.value.problem
    assert str(info.value).startswith(f"{path}:3:")


def test_two_subsections_with_one_id_are_a_duplicate_address(write: Write) -> None:
    path = write(
        "srs.csv",
        "section,subsection,content\n"
        "Functional Requirements,FR-1 Upload,x\n"
        "Functional Requirements,FR-1 Scan,y\n",
    )
    with pytest.raises(CorpusFileError, match="duplicate address requirement/FR-1") as info:
        load_file(path, "nutri")
    assert info.value.line == 3


def test_row_with_too_many_fields_is_reported(write: Write) -> None:
    path = write("srs.csv", "section,subsection,content\nPurpose,P,x,extra\n")
    with pytest.raises(CorpusFileError, match="more fields than the header"):
        load_file(path, "nutri")


def test_header_only_file_is_an_error(write: Write) -> None:
    with pytest.raises(CorpusFileError, match="no rows"):
        load_file(write("srs.csv", "section,subsection,content\n"), "nutri")
