from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from reag.corpus import CorpusFileError, load_file

MakePdf = Callable[[str, list[str]], Path]


def test_pdf_splits_at_numbered_sections_and_ids(make_pdf: MakePdf) -> None:
    path = make_pdf(
        "srs.pdf",
        [
            "NutriLens specification",
            "FR-01 Label scanning",
            "The app extracts the nutrition table from a photo.",
            "1. Retake when blurred.",
            "3.2 Sodium flags",
            "Sodium above 600 mg per 100 g is flagged.",
        ],
    )
    docs = load_file(path, "nutri", kind="requirement")
    assert [d.address for d in docs] == ["requirement/FR-01", "requirement/3.2"]
    assert docs[0].title == "Label scanning"
    assert "1. Retake when blurred." in docs[0].content
    assert "600 mg" in docs[1].content


def test_pdf_kind_from_file_name(make_pdf: MakePdf) -> None:
    docs = load_file(make_pdf("domain_knowledge.pdf", ["DK-1 Salt", "Under 5 g a day."]), "n")
    assert docs[0].address == "domain_knowledge/DK-1"


def test_pdf_without_kind_asks_for_it(make_pdf: MakePdf) -> None:
    with pytest.raises(CorpusFileError, match="pass --kind"):
        load_file(make_pdf("scan.pdf", ["DK-1 Salt", "Under 5 g."]), "n")


def test_unreadable_pdf_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "requirements.pdf"
    path.write_bytes(b"this is not a pdf at all")
    with pytest.raises(CorpusFileError) as info:
        load_file(path, "n")
    assert info.value.path == str(path)
    assert "unreadable PDF" in info.value.problem


def test_pdf_without_text_is_reported(make_pdf: MakePdf) -> None:
    with pytest.raises(CorpusFileError, match="no extractable text"):
        load_file(make_pdf("requirements.pdf", []), "n")
