"""The SRS templates the generator fills, kept as data (``templates/*.yaml``).

A template is a tree of numbered sections. Only the leaves carry text; a
section with subsections is a heading. Every leaf belongs to exactly one
top-level section, which is what the ``section`` column of the corpus CSV names.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

import yaml
from pydantic import BaseModel, Field, ValidationError, model_validator

from reag.drafting.errors import TemplateError

# The CLI name of each template, and the data file that holds it. "iso29148"
# is accepted too because the standard is as often cited by its ISO name.
TEMPLATE_FILES: dict[str, str] = {
    "ieee830": "ieee830.yaml",
    "ieee29148": "iso29148.yaml",
    "iso29148": "iso29148.yaml",
}


class TemplateSection(BaseModel):
    number: str = Field(pattern=r"^\d+(\.\d+)*$")
    title: str = Field(min_length=1)
    subsections: list[TemplateSection] = Field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.number} {self.title}"


class Template(BaseModel):
    id: str
    name: str
    sections: list[TemplateSection] = Field(min_length=1)

    @model_validator(mode="after")
    def _numbers_nest(self) -> Template:
        seen: set[str] = set()

        def walk(section: TemplateSection, parent: str | None) -> None:
            if section.number in seen:
                raise ValueError(f"section number {section.number} appears twice")
            seen.add(section.number)
            if parent is not None and not section.number.startswith(parent + "."):
                raise ValueError(f"section {section.number} is not inside {parent}")
            if parent is None and "." in section.number:
                raise ValueError(f"top-level section {section.number} must be a single number")
            for child in section.subsections:
                walk(child, section.number)

        for top in self.sections:
            walk(top, None)
        return self

    def leaves(self) -> list[Leaf]:
        """Every section that takes text, in document order."""
        out: list[Leaf] = []

        def walk(section: TemplateSection, top: TemplateSection, depth: int) -> None:
            if not section.subsections:
                out.append(Leaf(section.number, section.title, top.number, top.title, depth))
            for child in section.subsections:
                walk(child, top, depth + 1)

        for top in self.sections:
            walk(top, top, 1)
        return out

    def headings(self) -> list[tuple[TemplateSection, int]]:
        """Every section, leaf or not, with its depth (1 = top level), in document order."""
        out: list[tuple[TemplateSection, int]] = []

        def walk(section: TemplateSection, depth: int) -> None:
            out.append((section, depth))
            for child in section.subsections:
                walk(child, depth + 1)

        for top in self.sections:
            walk(top, 1)
        return out

    def outline(self) -> str:
        """The numbered outline as indented lines, for prompts."""
        return "\n".join(
            f"{'  ' * (depth - 1)}{section.label}" for section, depth in self.headings()
        )


@dataclass(frozen=True, slots=True)
class Leaf:
    """One section that takes text, with the top-level section it belongs to."""

    number: str
    title: str
    top_number: str
    top_title: str
    depth: int

    @property
    def label(self) -> str:
        return f"{self.number} {self.title}"

    @property
    def section_label(self) -> str:
        """The CSV ``section`` column: the top-level section with its number."""
        return f"{self.top_number} {self.top_title}"

    @property
    def subsection_label(self) -> str:
        """The CSV ``subsection`` column; empty when the top-level section is itself the leaf."""
        return "" if self.depth == 1 else self.label


def load_template(name: str) -> Template:
    """The template called ``name`` (``ieee830``, ``ieee29148``), read from the package data."""
    file_name = TEMPLATE_FILES.get(name.strip().lower())
    if file_name is None:
        known = ", ".join(sorted(TEMPLATE_FILES))
        raise TemplateError(f"unknown SRS template {name!r}; choose one of: {known}")
    return _load_file(file_name)


@cache
def _load_file(file_name: str) -> Template:
    text = (
        resources.files("reag.drafting")
        .joinpath("templates")
        .joinpath(file_name)
        .read_text("utf-8")
    )
    try:
        return Template.model_validate(yaml.safe_load(text))
    except ValidationError as exc:
        raise TemplateError(f"template file {file_name} is malformed: {exc}") from exc
