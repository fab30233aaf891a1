"""PDF corpus files: extracted text, split at headings that look like sections or ids.

A PDF carries no structure we can trust, so a heading is a short line that
starts with a section number ("3.2 Sodium flags") or a requirement-style id
("FR-03 Sugar flag") and does not read like a sentence. Numbered list items
("1. Eat less salt.") end with a full stop and are therefore left in the body.
"""

from __future__ import annotations

import re
from pathlib import Path

from reag.corpus.errors import CorpusFileError
from reag.corpus.kinds import kind_from_filename
from reag.corpus.model import CorpusLoad, Document, DocumentKind
from reag.corpus.naming import slugify

_HEADING = re.compile(
    r"^(?P<id>\d+(?:\.\d+)*\.?|[A-Za-z]{1,6}[-_]?\d+(?:[-_.]\d+)*)[:.)]?\s+(?P<title>[A-Z(].*)$"
)
_MAX_HEADING_WORDS = 12


def _heading(line: str) -> tuple[str, str] | None:
    match = _HEADING.match(line.strip())
    if match is None:
        return None
    title = match.group("title").strip()
    if title.endswith((".", ",", ";")) or len(title.split()) > _MAX_HEADING_WORDS:
        return None
    return match.group("id").rstrip("."), title


def extract_text(path: Path) -> str:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(path)
        if reader.is_encrypted:
            raise CorpusFileError(path, "the PDF is encrypted; export an unencrypted copy")
        pages = [page.extract_text() or "" for page in reader.pages]
    except CorpusFileError:
        raise
    except (PdfReadError, ValueError, KeyError, OSError) as exc:
        raise CorpusFileError(path, f"unreadable PDF: {exc}") from exc
    text = "\n".join(pages)
    if not text.strip():
        raise CorpusFileError(
            path,
            "the PDF has no extractable text (a scanned image?); run OCR on it or export the text",
        )
    return text


def load_pdf(path: Path, app: str, *, kind: DocumentKind | None = None) -> CorpusLoad:
    doc_kind = kind or kind_from_filename(path.stem)
    if doc_kind is None:
        raise CorpusFileError(
            path,
            "cannot tell the document kind from the file name; pass "
            "--kind (requirement, user_story, persona, domain_knowledge, "
            "background, nfr)",
        )
    lines = extract_text(path).splitlines()
    sections: list[tuple[str, str, list[str]]] = []
    preamble: list[str] = []
    for line in lines:
        heading = _heading(line)
        if heading is not None:
            sections.append((heading[0], heading[1], []))
        elif sections:
            sections[-1][2].append(line)
        else:
            preamble.append(line)

    if not sections:
        local_id = slugify(path.stem)
        whole = Document(
            app=app,
            kind=doc_kind,
            local_id=local_id,
            title=path.stem,
            content="\n".join(preamble).strip(),
            source=str(path),
        )
        return CorpusLoad([whole])

    documents: list[Document] = []
    seen: set[str] = set()
    for local_id, title, body in sections:
        content = "\n".join(body).strip()
        if not content:
            continue  # a table-of-contents line or a parent heading with only sub-sections
        if local_id in seen:
            raise CorpusFileError(
                path,
                f"duplicate address {doc_kind}/{local_id}: two headings start with {local_id!r}",
            )
        seen.add(local_id)
        documents.append(
            Document(
                app=app,
                kind=doc_kind,
                local_id=local_id,
                title=title,
                content=content,
                source=str(path),
            )
        )
    if not documents:
        raise CorpusFileError(path, "the PDF's headings have no text under them")
    return CorpusLoad(documents)
