"""Which live cases are sampled in: one key and one point, for every place that samples.

Two places decide whether a live case is kept: the recorder in the app's
process (``reag.client``, before the event exists) and the elicitor's shadow
gate (``reag.traffic.shadow``, on the event). Both call the functions here, so
a case the recorder keeps at rate r is kept by the gate at any rate from r up:
an app that samples 10% in the recorder and 50% in the elicitor keeps exactly
the users under 10%, and the gate never drops what the recorder sent.

The key is the user (``by="user"``, so a user is in or out for good and their
cases stay comparable) or else the request: its request id, or the case id
when the request has none (a case id is derived from the request id, so the
two agree whenever both exist). This module imports nothing from reag, so the
recorder's client package pulls in no store or spend code by sampling.
"""

from __future__ import annotations

import hashlib


def sample_point(key: str) -> float:
    """A uniform point in [0, 1) fixed by ``key``: the same key is always in or out."""
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def sample_key(
    app: str, user_id: str, request_id: str, case_id: str = "", *, by: str = "user"
) -> str | None:
    """The key a case is sampled on, or None when it has no id yet.

    ``by="user"`` keys on the user when there is one; otherwise (and for
    ``by="request"``) on the request id, falling back to the case id. None only
    when all three are empty: the recorder then draws at random, as the
    request id it will draw is random too.
    """
    if by == "user" and user_id:
        return f"{app}/user/{user_id}"
    if request_id or case_id:
        return f"{app}/request/{request_id or case_id}"
    return None


def kept(key: str, rate: float) -> bool:
    """Whether the case keyed ``key`` is in a sample at ``rate`` (every case at 1.0)."""
    return rate >= 1.0 or sample_point(key) < rate
