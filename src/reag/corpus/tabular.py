"""CSV corpus files in the ``section,subsection,content`` shape of SRS exports.

This is also what the requirements-drafting agents write, with IEEE 830 /
ISO 29148 section titles; ``reag.corpus.kinds`` maps a section title to a
document kind. Rows sharing a (section kind, subsection) are one document
whose paragraphs arrive row by row, so they are merged in file order.

A bad row (no content, an unknown section, an id clash, too many fields) is
skipped and named by its line and subsection; the other rows are kept. Only a
problem with the file itself (its header, its encoding, CSV it cannot parse)
refuses the file.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from reag.corpus.errors import CorpusFileError, SkippedPart
from reag.corpus.kinds import kind_from_section
from reag.corpus.model import CorpusLoad, Document, DocumentKind
from reag.corpus.naming import id_for_heading, split_heading

REQUIRED_COLUMNS = ("section", "subsection", "content")


@dataclass
class _Pending:
    kind: DocumentKind
    local_id: str
    title: str
    section: str
    subsection: str
    first_row: int
    paragraphs: list[str] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)


def load_csv(path: Path, app: str, *, kind: DocumentKind | None = None) -> CorpusLoad:
    """``kind`` is unused: every row's kind comes from its section title."""
    del kind
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        header = [(name or "").strip().lower() for name in reader.fieldnames or []]
        missing = [c for c in REQUIRED_COLUMNS if c not in header]
        if missing:
            raise CorpusFileError(
                path,
                f"bad CSV header {reader.fieldnames or []!r}: expected the columns "
                f"section,subsection,content (missing {', '.join(missing)})",
                line=1,
            )
        reader.fieldnames = header
        pending: dict[tuple[str, str], _Pending] = {}
        subsection_of: dict[tuple[str, str], str] = {}
        skipped: list[SkippedPart] = []
        try:
            for row in reader:
                number = reader.line_num
                try:
                    _add_row(path, row, number, pending, subsection_of)
                except CorpusFileError as exc:
                    skipped.append(SkippedPart(exc.path, exc.problem, exc.line))
        except csv.Error as exc:
            raise CorpusFileError(path, f"unreadable CSV: {exc}", line=reader.line_num) from exc
    if not pending and not skipped:
        skipped.append(SkippedPart(str(path), "the CSV has a header but no rows"))
    documents = [
        Document(
            app=app,
            kind=p.kind,
            local_id=p.local_id,
            title=p.title,
            content="\n\n".join(p.paragraphs),
            source=str(path),
            metadata={"section": p.section, "subsection": p.subsection, "rows": p.rows},
        )
        for p in pending.values()
    ]
    return CorpusLoad(documents, skipped)


def _add_row(
    path: Path,
    row: dict[str | None, str | list[str] | None],
    number: int,
    pending: dict[tuple[str, str], _Pending],
    subsection_of: dict[tuple[str, str], str],
) -> None:
    """Adds one row, or raises ``CorpusFileError`` naming it before anything is changed."""
    if None in row:
        raise CorpusFileError(path, "row has more fields than the header", line=number)
    section = str(row.get("section") or "").strip()
    subsection = str(row.get("subsection") or "").strip()
    content = str(row.get("content") or "").strip()
    if not (section or subsection or content):
        return  # blank line in a spreadsheet export
    if not section:
        named = f" {subsection!r}" if subsection else ""
        raise CorpusFileError(path, f"row{named} has no section", line=number)
    if not content:
        named = f"subsection {subsection!r} of section" if subsection else "section"
        raise CorpusFileError(path, f"row of {named} {section!r} has no content", line=number)
    kind = kind_from_section(section)
    if kind is None:
        raise CorpusFileError(
            path,
            f"unknown section {section!r}: name it after a document kind (e.g. "
            "'Functional Requirements', 'User Stories', 'Personas', 'Domain Knowledge', "
            "'Background', 'Non-Functional Requirements'); see docs/retrieval.md",
            line=number,
        )
    heading = subsection or section
    local_id = id_for_heading(heading)
    if not local_id:
        raise CorpusFileError(
            path, f"subsection {heading!r} has no letters or digits to make an id from", line=number
        )
    key = (kind, local_id)
    earlier = subsection_of.get(key)
    if earlier is not None and earlier != heading:
        raise CorpusFileError(
            path,
            f"duplicate address {kind}/{local_id}: subsection {heading!r} and "
            f"{earlier!r} (row {pending[key].first_row}) give the same id",
            line=number,
        )
    if key not in pending:
        _, title = split_heading(heading)
        pending[key] = _Pending(kind, local_id, title, section, subsection, number)
        subsection_of[key] = heading
    pending[key].paragraphs.append(content)
    pending[key].rows.append(number)
