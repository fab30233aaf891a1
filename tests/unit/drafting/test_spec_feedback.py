from __future__ import annotations

from pathlib import Path

import pytest

from reag.drafting.document import SrsDocument
from reag.drafting.errors import FeedbackError
from reag.drafting.feedback import feedback_from_file, parse_feedback
from reag.drafting.template import load_template


def test_bullets_continuations_and_plain_lines() -> None:
    text = (
        "# reviewer notes\n"
        "- Add the 3 s score-card limit\n"
        "  to section 3.3.\n"
        "* Name the allergens.\n"
        "2. Drop marketing words\n"
        "\n"
        "Plain remark\n"
    )
    assert parse_feedback(text) == [
        "Add the 3 s score-card limit to section 3.3.",
        "Name the allergens.",
        "Drop marketing words",
        "Plain remark",
    ]


def test_feedback_file_without_points_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "fb.md"
    empty.write_text("\n# only a comment\n", encoding="utf-8")
    with pytest.raises(FeedbackError, match="no bullet points"):
        feedback_from_file(empty)
    with pytest.raises(FeedbackError, match="cannot read"):
        feedback_from_file(tmp_path / "missing.md")


def test_feedback_file_gives_the_same_points_every_round(tmp_path: Path) -> None:
    path = tmp_path / "fb.md"
    path.write_text("- one\n- two\n", encoding="utf-8")
    source = feedback_from_file(path)
    document = SrsDocument(load_template("ieee830"), "x")
    assert source(document, 1) == source(document, 2) == ["one", "two"]
