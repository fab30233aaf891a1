"""Which label an item gets from several reviewers, and in what order items are offered.

Pure functions, shared by the store-backed queue (``reag.review.queue``) and its
tests, so the rules a reviewer meets are stated once:

- Resolution: with ``per_item`` reviewers per item (1 or 2), an item is resolved
  when one of YES/NO has at least ``per_item`` votes and strictly more than the
  other. Single review: the first YES/NO decides. Double review: two agreeing
  labels decide; a disagreement (1-1) sends the item to a third reviewer, whose
  label makes the majority. "Cannot tell" is recorded but is no vote; after
  ``MAX_CANNOT_TELL`` of them the item is closed unresolved and nothing reaches
  ``reag.reviews.v1``.
- Exactly one ``Review`` per item is published, carrying the resolved label,
  so calibration (which keys items by criterion id) counts the item once.
- Order: for apps without a threshold of their own, their audits first (a
  uniform sample of traffic: its labels are exchangeable, issue 26), then
  every other audit, then abstentions; oldest first within each.
- Reason kinds: the abstain's ``reason`` text names the tiers' confidences, so
  it is never shown or filtered on as is before a label; ``reason_kind`` maps
  it to a short slug (``audit``, ``not_confident``, ``no_threshold``, or the
  leading ``slug:`` the cascade writes, e.g. ``undecidable`` and
  ``suspected_injection``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from reag.v1 import events_pb2 as pb

Vote = Literal["YES", "NO", "CANNOT_TELL", "SKIP"]
VOTES: tuple[Vote, ...] = ("YES", "NO", "CANNOT_TELL", "SKIP")
DECISIVE: tuple[Vote, ...] = ("YES", "NO")
MAX_CANNOT_TELL = 3

AUDIT_FIRST, AUDIT, ABSTENTION = 0, 1, 2

_SLUG = re.compile(r"^([a-z][a-z_]*)\s*[:;]")


def resolve(votes: Sequence[Vote], per_item: int) -> Vote | None:
    """The item's label once its votes settle it, else None (see the module's rules)."""
    yes, no = votes.count("YES"), votes.count("NO")
    leader: Vote = "YES" if yes > no else "NO"
    lead, other = max(yes, no), min(yes, no)
    if lead >= max(per_item, 1) and lead > other:
        return leader
    return None


def closed_unresolved(votes: Sequence[Vote]) -> bool:
    """True when so many reviewers could not tell that the item leaves the queue."""
    return votes.count("CANNOT_TELL") >= MAX_CANNOT_TELL


def priority(*, audit: bool, app_has_threshold: bool) -> int:
    """Queue rank: lower is offered first."""
    if audit and not app_has_threshold:
        return AUDIT_FIRST
    return AUDIT if audit else ABSTENTION


def reason_kind(abstain: pb.Abstain) -> str:
    """A short, blind name for why the item is in review (never the tiers' numbers)."""
    if abstain.audit:
        return "audit"
    reason = abstain.reason.strip()
    match = _SLUG.match(reason)
    if match:
        return match.group(1)
    if reason.startswith("no tier was confident enough"):
        return (
            "no_threshold"
            if "no calibrated threshold" in reason and ("confidence" not in reason)
            else "not_confident"
        )
    return "other" if reason else "unspecified"


def as_label(vote: Vote) -> pb.Label.ValueType:
    return pb.LABEL_YES if vote == "YES" else pb.LABEL_NO
