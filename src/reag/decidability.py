"""Whether a response's text can decide a criterion: one fixed rule, used twice.

The oracle drops a drafted criterion that this rule flags (``reag.oracle.checks``)
and the judge abstains on one with reason ``undecidable`` (``reag.judging.guards``),
so expert- or user-written criteria, which never pass the oracle's checks, meet
the same rule. A claim about the interface, a purchase flow, stored data,
messages sent or what happens later cannot be read in a response. The list is
fixed (not tuned per app) so counts compare across runs; its measured precision
and recall are in docs/cascade.md (``python -m bench decidability``).
"""

from __future__ import annotations

import re

UNDECIDABLE = re.compile(
    r"\b(user interface|ui|button|screen|click|colou?r|font|icon|layout|"
    r"purchase flow|completes? the purchase|checkout|basket|cart|payment flow|proceed with|"
    r"allows? the user to|database|stored|"
    r"logs?|logged|sends? (?:an? )?(?:e-?mail|message|sms|text)|notification|"
    r"latency|within \d+ ?(?:s|ms|seconds)|next time|follow[- ]up|remembers?)\b",
    re.IGNORECASE,
)
"""Claims about what is not in a response's text (a fixed list, so counts compare)."""


def undecidable(criterion: str) -> bool:
    """True if ``criterion`` makes a claim the response text cannot show."""
    return UNDECIDABLE.search(criterion) is not None
