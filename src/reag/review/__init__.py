"""The review tool's core: show an abstained criterion, collect a reviewer's label, publish it.

No Kafka here: ``session.review_loop`` takes a source of abstain records and a
sink for reviews; ``reag review`` plugs in the Kafka ones.
"""

from reag.review.labels import Decision, LabelFileError, ScriptedLabeler, TerminalLabeler
from reag.review.render import render_case
from reag.review.session import (
    AbstainSource,
    ReviewSink,
    ReviewStats,
    SourceItem,
    build_review,
    review_loop,
)

__all__ = [
    "AbstainSource",
    "Decision",
    "LabelFileError",
    "ReviewSink",
    "ReviewStats",
    "ScriptedLabeler",
    "SourceItem",
    "TerminalLabeler",
    "build_review",
    "render_case",
    "review_loop",
]
