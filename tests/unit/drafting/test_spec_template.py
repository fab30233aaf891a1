from __future__ import annotations

import pytest

from reag.drafting.errors import TemplateError
from reag.drafting.template import Template, load_template


def test_ieee830_has_the_standard_outline() -> None:
    template = load_template("ieee830")
    tops = [s.label for s in template.sections]
    assert tops == ["1 Introduction", "2 Overall description", "3 Specific requirements"]
    numbers = [leaf.number for leaf in template.leaves()]
    assert numbers[:5] == ["1.1", "1.2", "1.3", "1.4", "1.5"]
    assert "3.1.1" in numbers
    assert "3.5.3" in numbers
    # A heading with subsections takes no text of its own.
    assert "3.1" not in numbers
    assert "3.5" not in numbers
    assert len(numbers) == len(set(numbers)) == 24


def test_iso29148_has_the_standard_outline_and_accepts_both_names() -> None:
    template = load_template("ieee29148")
    assert load_template("iso29148") is template
    tops = [s.label for s in template.sections]
    assert tops == [
        "1 Introduction",
        "2 References",
        "3 Requirements",
        "4 Verification",
        "5 Appendices",
    ]
    leaves = {leaf.number: leaf for leaf in template.leaves()}
    assert leaves["1.3.2"].label == "1.3.2 Product functions"
    # A top-level section without subsections is itself a leaf, with no subsection label.
    assert leaves["2"].section_label == "2 References"
    assert leaves["2"].subsection_label == ""
    assert leaves["3.3"].section_label == "3 Requirements"
    assert leaves["3.3"].subsection_label == "3.3 Usability requirements"


def test_unknown_template_names_the_choices() -> None:
    with pytest.raises(TemplateError, match="ieee830"):
        load_template("ieee1234")


def test_misnumbered_template_is_rejected() -> None:
    with pytest.raises(ValueError, match="not inside"):
        Template.model_validate(
            {
                "id": "x",
                "name": "x",
                "sections": [
                    {"number": "1", "title": "A", "subsections": [{"number": "2.1", "title": "B"}]}
                ],
            }
        )


def test_outline_lists_every_heading_indented() -> None:
    outline = load_template("ieee830").outline().splitlines()
    assert outline[0] == "1 Introduction"
    assert "  3.1 External interface requirements" in outline
    assert "    3.1.2 Hardware interfaces" in outline
