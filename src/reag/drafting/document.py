"""An SRS as the agents build it, and its two file forms: Markdown and corpus CSV.

The document is keyed by the template's leaf sections. A leaf is *filled*
when it has text or when the generator explicitly decided it is not specified;
the orchestrator sends every other leaf back. The CSV form is the corpus
format (``section,subsection,content``) that ``reag corpus add`` ingests.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

from reag.drafting.errors import DocumentFormatError
from reag.drafting.template import Leaf, Template

NOT_SPECIFIED = "Not specified."
CSV_HEADER = ("section", "subsection", "content")

# A single line that starts with "not specified", optionally in brackets or
# with a short reason: the generator's explicit "nothing to say here".
_NOT_SPECIFIED_RE = re.compile(r"^\W*not specified\b[^\n]{0,200}$", re.IGNORECASE)
_HEADING_RE = re.compile(r"^(#{1,6})\s+(?:(\d+(?:\.\d+)*)\.?\s+)?(.+?)\s*#*\s*$")


def clean_section_text(text: str) -> str:
    """Section body as it may be stored: no Markdown headings inside, trimmed.

    A model that echoes a heading (or invents new ones) would otherwise split
    the section when the Markdown is read back, so heading markers are dropped
    and the heading text kept as a plain line.
    """
    lines = [re.sub(r"^\s*#{1,6}\s*", "", line) for line in text.strip().splitlines()]
    return "\n".join(lines).strip()


def is_blank(text: str) -> bool:
    """No letter or digit at all: empty, whitespace, or punctuation only."""
    return not any(ch.isalnum() for ch in text)


def is_not_specified(text: str) -> bool:
    return bool(_NOT_SPECIFIED_RE.match(text.strip()))


@dataclass(frozen=True, slots=True)
class SrsRow:
    """One row of the corpus CSV."""

    section: str
    subsection: str
    content: str


class SrsDocument:
    """Text per leaf section of one template; missing leaves are simply absent."""

    def __init__(self, template: Template, title: str) -> None:
        self.template = template
        self.title = title
        self._texts: dict[str, str] = {}
        self._leaves = {leaf.number: leaf for leaf in template.leaves()}

    def copy(self) -> SrsDocument:
        other = SrsDocument(self.template, self.title)
        other._texts = dict(self._texts)
        return other

    def leaf(self, number: str) -> Leaf:
        try:
            return self._leaves[number]
        except KeyError:
            raise DocumentFormatError(
                f"section {number} is not a leaf of template {self.template.id}"
            ) from None

    def set_text(self, number: str, text: str) -> None:
        """Store a section's text as the generator wrote it (cleaned, never trusted blindly)."""
        self.leaf(number)
        cleaned = clean_section_text(text)
        self._texts[number] = NOT_SPECIFIED if is_not_specified(cleaned) else cleaned

    def text(self, number: str) -> str:
        self.leaf(number)
        return self._texts.get(number, "")

    def is_not_specified(self, number: str) -> bool:
        return self._texts.get(number) == NOT_SPECIFIED

    def is_filled(self, number: str) -> bool:
        return not is_blank(self._texts.get(number, ""))

    def unfilled(self) -> list[Leaf]:
        """Leaves that are absent or empty, and not marked "not specified"."""
        return [leaf for leaf in self._leaves.values() if not self.is_filled(leaf.number)]

    def rows(self) -> list[SrsRow]:
        return [
            SrsRow(leaf.section_label, leaf.subsection_label, self.text(leaf.number))
            for leaf in self._leaves.values()
        ]

    def to_csv(self) -> str:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(CSV_HEADER)
        for row in self.rows():
            writer.writerow((row.section, row.subsection, row.content))
        return buffer.getvalue()

    def to_markdown(self) -> str:
        parts = [
            f"# Software Requirements Specification: {self.title}",
            "",
            f"Template: {self.template.name} (`{self.template.id}`).",
        ]
        for section, depth in self.template.headings():
            parts += ["", f"{'#' * (depth + 1)} {section.label}"]
            if not section.subsections:
                parts += ["", self.text(section.number)]
        return "\n".join(parts).rstrip() + "\n"

    @classmethod
    def from_markdown(cls, text: str, template: Template) -> SrsDocument:
        """Read back a document written by ``to_markdown`` (or shaped like it)."""
        title_match = re.search(r"^#\s+Software Requirements Specification:\s*(.+)$", text, re.M)
        document = cls(template, title_match.group(1).strip() if title_match else "")
        for section in parse_markdown_sections(text):
            if section.number in document._leaves:
                document.set_text(section.number, section.body)
        return document


@dataclass(frozen=True, slots=True)
class MarkdownSection:
    number: str
    title: str
    depth: int
    body: str

    @property
    def label(self) -> str:
        return f"{self.number} {self.title}"


def parse_markdown_sections(text: str) -> list[MarkdownSection]:
    """Every numbered heading of a Markdown file with the text right under it.

    Unnumbered headings (the document title, "Template: ...") are not
    sections; their text is dropped. Numbers like ``3.`` are read as ``3``.
    """
    sections: list[MarkdownSection] = []
    current: tuple[str, str, int] | None = None
    body: list[str] = []

    def close() -> None:
        if current is not None:
            sections.append(MarkdownSection(*current, body="\n".join(body).strip()))

    for line in text.splitlines():
        match = _HEADING_RE.match(line)
        if match:
            close()
            body = []
            number = match.group(2)
            current = (number, match.group(3).strip(), number.count(".") + 1) if number else None
        elif current is not None:
            body.append(line)
    close()
    return sections


def top_level_texts(sections: list[MarkdownSection]) -> dict[str, tuple[str, str]]:
    """Top-level section number → (its label, all text under it, subsections included)."""
    out: dict[str, tuple[str, list[str]]] = {}
    for section in sections:
        top = section.number.split(".")[0]
        if section.depth == 1:
            out.setdefault(top, (section.label, []))
        _, bodies = out.setdefault(top, (top, []))
        if section.body:
            bodies.append(section.body)
    return {number: (label, "\n\n".join(bodies)) for number, (label, bodies) in out.items()}


def read_csv_rows(text: str, source: str = "<csv>") -> list[SrsRow]:
    """Rows of a ``section,subsection,content`` CSV; anything else is a clear error."""
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None or tuple(h.strip().lower() for h in header) != CSV_HEADER:
        raise DocumentFormatError(
            f"{source}: the first row must be exactly 'section,subsection,content', got {header!r}"
        )
    rows: list[SrsRow] = []
    for line_no, record in enumerate(reader, start=2):
        if not record:
            continue
        if len(record) != len(CSV_HEADER):
            raise DocumentFormatError(
                f"{source}: row {line_no} has {len(record)} fields, expected 3 "
                "(quote content that contains commas)"
            )
        rows.append(SrsRow(*(field.strip() for field in record)))
    return rows


def csv_top_level_texts(rows: list[SrsRow]) -> dict[str, tuple[str, str]]:
    """Like ``top_level_texts`` for CSV rows: grouped by the ``section`` column's number."""
    out: dict[str, tuple[str, list[str]]] = {}
    for row in rows:
        number = row.section.split(" ", 1)[0].rstrip(".")
        _, bodies = out.setdefault(number, (row.section, []))
        if row.content:
            bodies.append(row.content)
    return {number: (label, "\n\n".join(bodies)) for number, (label, bodies) in out.items()}
