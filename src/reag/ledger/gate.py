"""The CI gate: does a run's fail rate or abstain rate exceed what the team accepts?

A case still pending (not every criterion has left the cascade) counts as
abstained here: a gate must not pass a run because its results have not
arrived yet. A case already failed counts as failed even while incomplete.

A provisional outcome (it rests on verdicts accepted under a threshold the
app borrowed from other apps and has not certified with its own audits)
counts as abstained too, unless the caller asks to count provisional
verdicts: the pool's promise is not the app's, and a gate is a promise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reag.ledger.store import LedgerError
from reag.v1 import events_pb2 as pb


class NoResultsError(LedgerError):
    """The gate was asked about a run the store holds no result for."""


class InvalidRateError(LedgerError):
    """A rate limit outside [0, 1]."""


@dataclass(frozen=True, slots=True)
class GateReport:
    cases: int
    failed: int
    abstained: int
    pending: int
    provisional: int  # provisional outcomes; counted as abstained unless counted as they are
    fail_rate: float
    abstain_rate: float
    max_fail_rate: float
    max_abstain_rate: float

    @property
    def breaches(self) -> tuple[str, ...]:
        found: list[str] = []
        if self.fail_rate > self.max_fail_rate:
            found.append(
                f"fail rate {self.fail_rate:.3f} exceeds --max-fail-rate {self.max_fail_rate:.3f}"
            )
        if self.abstain_rate > self.max_abstain_rate:
            found.append(
                f"abstain rate {self.abstain_rate:.3f} exceeds --max-abstain-rate "
                f"{self.max_abstain_rate:.3f}"
            )
        return tuple(found)

    @property
    def passed(self) -> bool:
        return not self.breaches


def _check_rate(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise InvalidRateError(f"{name} must be a fraction between 0 and 1, got {value}")


def evaluate_gate(
    results: Sequence[pb.Result],
    *,
    max_fail_rate: float,
    max_abstain_rate: float,
    scope: str = "the selected results",
    count_provisional: bool = False,
) -> GateReport:
    _check_rate("--max-fail-rate", max_fail_rate)
    _check_rate("--max-abstain-rate", max_abstain_rate)
    if not results:
        raise NoResultsError(
            f"no results for {scope}; check --app / --run-id, REAG_STORE_DSN, "
            "and that the ledger has consumed the run"
        )
    provisional = sum(r.provisional for r in results)
    held = [r.provisional and not count_provisional for r in results]  # read as abstained
    failed = sum(r.outcome == pb.OUTCOME_FAIL and not h for r, h in zip(results, held, strict=True))
    pending = sum(r.outcome == pb.OUTCOME_UNSPECIFIED for r in results)
    abstained = sum(
        h or r.outcome in (pb.OUTCOME_ABSTAIN, pb.OUTCOME_UNSPECIFIED)
        for r, h in zip(results, held, strict=True)
    )
    cases = len(results)
    return GateReport(
        cases=cases,
        failed=failed,
        abstained=abstained,
        pending=pending,
        provisional=provisional,
        fail_rate=failed / cases,
        abstain_rate=abstained / cases,
        max_fail_rate=max_fail_rate,
        max_abstain_rate=max_abstain_rate,
    )
