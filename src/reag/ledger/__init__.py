"""The ledger: one PASS / FAIL / ABSTAIN result per test case, stored, served and reported.

``outcome`` holds the rules (a pure function of a case's events), ``store``
persists events and results idempotently, ``api`` serves them over gRPC,
``summary``, ``report`` and ``gate`` turn them into figures, documents and a
CI verdict. Nothing here knows Kafka; ``services/ledger`` wires it to topics.
"""

from reag.ledger.outcome import CaseEvents, build_result, is_reviewed, reviewer_of
from reag.ledger.store import LedgerStore, LedgerUpdate

__all__ = [
    "CaseEvents",
    "LedgerStore",
    "LedgerUpdate",
    "build_result",
    "is_reviewed",
    "reviewer_of",
]
