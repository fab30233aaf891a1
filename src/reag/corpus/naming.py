"""Turning headings and subsection titles into document ids.

A heading such as ``FR-03 Sugar flag`` already carries the id its authors use
in reviews and traceability matrices, so it is kept verbatim; other headings
become a slug so the address stays stable when the text is re-ingested.
"""

from __future__ import annotations

import re
import unicodedata

_ID_TOKEN = re.compile(r"^[A-Za-z0-9]+(?:[-_.][A-Za-z0-9]+)*$")
_TRAILING = ":;,.)]—–-"  # punctuation that separates an id from its title
_SEPARATOR = re.compile(r"^[\s:;,.)\]—–-]+")
_MAX_SLUG = 64


def slugify(text: str) -> str:
    """Lower-case ASCII words joined by dashes; empty when the text has no letters or digits."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return slug[:_MAX_SLUG].rstrip("-")


def looks_like_id(token: str) -> bool:
    """Letters and digits with ``-``, ``_`` or ``.`` between, at least one digit (FR-03, 3.2)."""
    return bool(_ID_TOKEN.match(token)) and any(c.isdigit() for c in token)


def split_heading(heading: str) -> tuple[str | None, str]:
    """``(id, title)`` of a heading: the id is its first token when that looks like one."""
    heading = heading.strip()
    first, _, rest = heading.partition(" ")
    token = first.rstrip(_TRAILING)
    if token and looks_like_id(token):
        title = _SEPARATOR.sub("", rest).strip()
        return token, title or heading
    return None, heading


def id_for_heading(heading: str) -> str:
    """The heading's own id if it has one, else its slug ('' if it has neither)."""
    token, _ = split_heading(heading)
    return token if token is not None else slugify(heading)
