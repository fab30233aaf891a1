"""Reviewer feedback for human-feedback mode: concise bullet points, as in Agent4RE 3.3."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from reag.drafting.document import SrsDocument
from reag.drafting.errors import FeedbackError

# Called once per refinement round with the current draft and the round number.
FeedbackSource = Callable[[SrsDocument, int], list[str]]

_BULLET_RE = re.compile(r"^\s*(?:[-*•+]|\d+[.)])\s+")


def parse_feedback(text: str) -> list[str]:
    """One point per bullet; an indented line without a marker continues the point before it.

    Lines with no bullet marker at all count as points of their own, so a
    reviewer may also write one remark per line.
    """
    points: list[str] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        marker = _BULLET_RE.match(line)
        if marker:
            points.append(line[marker.end() :].strip())
        elif line[:1].isspace() and points:
            points[-1] = f"{points[-1]} {line.strip()}"
        else:
            points.append(line.strip())
    return [p for p in points if p]


def feedback_from_file(path: Path) -> FeedbackSource:
    """The same reviewer points for every round; a file without any is an error up front."""
    try:
        points = parse_feedback(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise FeedbackError(f"cannot read feedback file {path}: {exc.strerror}") from exc
    if not points:
        raise FeedbackError(
            f"feedback file {path} holds no bullet points; write one '- point' per line"
        )

    def source(_document: SrsDocument, _round: int) -> list[str]:
        return list(points)

    return source
