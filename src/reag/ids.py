"""Identifiers that make reprocessing idempotent.

A test case id is derived from the app and the request id when the app gives
one, so a redelivered traffic event maps to the same case; every id below it
(oracle, criteria) is derived from the case id, never drawn at random.
"""

from __future__ import annotations

import hashlib
import uuid

_NAMESPACE = uuid.UUID("6f1c7c52-4a0e-4b8e-9a0e-72c1d3d0a1e5")


def case_id_for(app: str, request_id: str | None = None) -> str:
    """Deterministic for (app, request_id); random when the request has no id."""
    if request_id:
        return f"{app}-{uuid.uuid5(_NAMESPACE, f'{app}/{request_id}').hex[:16]}"
    return f"{app}-{uuid.uuid4().hex[:16]}"


_LETTERS = str.maketrans("0123456789", "ghijklmnop")


def digits_as_letters(text: str) -> str:
    """``text`` with each digit mapped to a letter (0-9 to g-p): an id with no run of
    digits, which the redactor could read as a phone or card number."""
    return text.translate(_LETTERS)


def request_id_for(query: str, response: str, user_id: str, created_at_ns: int) -> str:
    """The request id of an exchange that came without one, derived from what it holds.

    A retry after an uncertain acknowledgement carries the same content, user and
    client timestamp, so it gets the same id and lands on the same case; a genuine
    repeat (the same question asked again later) has a later timestamp and is a
    case of its own. Letters only (the hex digits mapped to g-p): a run of digits
    in an id could read as a phone or card number to the redactor.
    """
    digest = hashlib.sha256()
    for part in (query, response, user_id, str(created_at_ns)):
        data = part.encode("utf-8", errors="surrogatepass")
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return "d" + digits_as_letters(digest.hexdigest()[:31])


def oracle_id_for(case_id: str) -> str:
    return f"{case_id}/oracle"


def criterion_id_for(case_id: str, index: int) -> str:
    return f"{case_id}/c{index}"


def case_id_of_criterion(criterion_id: str) -> str:
    case_id, sep, tail = criterion_id.rpartition("/c")
    if not sep or not tail.isdigit():
        raise ValueError(f"not a criterion id: {criterion_id!r}")
    return case_id
