from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reag.drafting.document import SrsDocument
from reag.drafting.evaluation import compare, read_spec_text
from reag.drafting.metrics import MetricResult, Pair
from reag.drafting.template import load_template


class Echo:
    """Reports how many characters the generated side has, so tests see what was compared."""

    name = "echo"

    def __init__(self) -> None:
        self.seen: list[Pair] = []

    def settings(self) -> dict[str, Any]:
        return {"unit": "characters"}

    def score(self, pairs: Sequence[Pair]) -> list[MetricResult]:
        self.seen.extend(pairs)
        return [MetricResult(self.name, float(len(g)), self.settings()) for g, _ in pairs]


GENERATED = """# Software Requirements Specification: X

## 1 Introduction

### 1.1 Purpose

Gen purpose.

## 2 Overall description

### 2.1 Product perspective

--

## 9 Extra

Only here.
"""

REFERENCE = """# Reference

## 1. Introduction

Ref intro.

### 1.1 Purpose

Ref purpose.

## 2. Overall description

Ref overall.

## 3. Specific requirements

Ref specific.
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_sections_are_matched_by_number_and_headings_are_not_compared(tmp_path: Path) -> None:
    metric = Echo()
    report = compare(
        read_spec_text(write(tmp_path, "g.md", GENERATED)),
        read_spec_text(write(tmp_path, "r.md", REFERENCE)),
        [metric],
    )
    assert report["document"]["echo"]["value"] == len("Gen purpose.\n\nOnly here.")
    assert all("Purpose" not in gen for gen, _ in metric.seen)
    sections = {s["number"]: s for s in report["sections"]}
    assert list(sections) == ["1", "2"]
    assert sections["1"]["reference"] == "1 Introduction"
    assert sections["1"]["metrics"]["echo"]["value"] == len("Gen purpose.")
    # An empty generated section gets a reason, not a number, and is not scored.
    assert sections["2"]["metrics"]["echo"]["value"] is None
    assert sections["2"]["metrics"]["echo"]["error"] == "the generated text is empty"
    assert len(metric.seen) == 2
    assert report["unmatched"] == {
        "only_generated": ["9 Extra"],
        "only_reference": ["3 Specific requirements"],
    }


def test_csv_and_markdown_of_one_document_read_the_same(tmp_path: Path) -> None:
    template = load_template("ieee830")
    document = SrsDocument(template, "x")
    for leaf in template.leaves():
        document.set_text(leaf.number, f"About {leaf.title}, briefly.")
    from_md = read_spec_text(write(tmp_path, "s.md", document.to_markdown()))
    from_csv = read_spec_text(write(tmp_path, "s.csv", document.to_csv()))
    assert from_md.whole == from_csv.whole
    assert [v[1] for v in from_md.sections.values()] == [v[1] for v in from_csv.sections.values()]


def test_unsectioned_text_is_compared_whole(tmp_path: Path) -> None:
    text = read_spec_text(write(tmp_path, "plain.txt", "Just prose.\nMore prose."))
    assert text.whole == "Just prose.\nMore prose."
    assert text.sections == {}


def test_example_reference_srs_fills_every_ieee830_section() -> None:
    path = Path(__file__).parents[3] / "examples" / "nutrition" / "reference_srs.md"
    template = load_template("ieee830")
    document = SrsDocument.from_markdown(path.read_text(encoding="utf-8"), template)
    assert document.title == "NutriLens (illustrative)"
    assert [leaf.label for leaf in document.unfilled()] == []
    assert list(read_spec_text(path).sections) == ["1", "2", "3"]
