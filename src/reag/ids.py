"""Identifiers that make reprocessing idempotent.

A test case id is derived from the app and the request id when the app gives
one, so a redelivered traffic event maps to the same case; every id below it
(oracle, criteria) is derived from the case id, never drawn at random.
"""

from __future__ import annotations

import uuid

_NAMESPACE = uuid.UUID("6f1c7c52-4a0e-4b8e-9a0e-72c1d3d0a1e5")


def case_id_for(app: str, request_id: str | None = None) -> str:
    """Deterministic for (app, request_id); random when the request has no id."""
    if request_id:
        return f"{app}-{uuid.uuid5(_NAMESPACE, f'{app}/{request_id}').hex[:16]}"
    return f"{app}-{uuid.uuid4().hex[:16]}"


def oracle_id_for(case_id: str) -> str:
    return f"{case_id}/oracle"


def criterion_id_for(case_id: str, index: int) -> str:
    return f"{case_id}/c{index}"


def case_id_of_criterion(criterion_id: str) -> str:
    case_id, sep, tail = criterion_id.rpartition("/c")
    if not sep or not tail.isdigit():
        raise ValueError(f"not a criterion id: {criterion_id!r}")
    return case_id
