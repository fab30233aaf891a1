"""Which criteria are audited: a share of all of them, picked from the criterion id alone.

The pick must not depend on anything a tier computes, or the audits would
stop being a uniform sample of traffic: it is a hash of the criterion id,
read as a number in [0, 1). Deterministic, so a redelivered request is
audited again or not at all, and every tier (and a reviewer's tool) reaches
the same answer without being told.
"""

from __future__ import annotations

import hashlib

from reag.v1 import events_pb2 as pb

DEFAULT_AUDIT_RATE = 0.02
DEFAULT_PROVISIONAL_AUDIT_RATE = 0.10
"""For an app on a borrowed, provisional threshold: its audits are what settle it."""
_SALT = b"reag-audit-v1:"


def audit_draw(criterion_id: str) -> float:
    """A uniform number in [0, 1) fixed by the criterion id."""
    digest = hashlib.sha256(_SALT + criterion_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def is_audit(criterion_id: str, rate: float) -> bool:
    """True for about ``rate`` of all criterion ids, the same ones every time."""
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"audit rate must be in [0, 1], got {rate}")
    return audit_draw(criterion_id) < rate


def is_review_copy(abstain: pb.Abstain) -> bool:
    """An audit that a tier accepted, sent to review: its verdict is on the verdicts topic,
    so the ledger must not count it as an abstention."""
    return abstain.audit and any(a.accepted for a in abstain.request.history)
