"""Day one of an app with no labels: borrow a threshold, then let the app's audits settle it.

``borrow_thresholds`` gives a new app the thresholds in force of a lender app
whose labelled items they were fitted on, marked provisional, and lends it
the lender's annotator example sets (``reag.judging.pinning.lend_examples``):
the new app's judge is then the very judge those thresholds were fitted on,
so it accepts under them instead of refusing them as another identity's.

``settle`` is what the calibrator does after each audit of such an app: the
audits labelled since the provisional thresholds were published decide, by
``reag.trust.provisional.standing``, whether they stay provisional, are
certified (republished unmarked, a new epoch) or are withdrawn (republished
with no threshold, ``withdrawn`` set: the tier accepts nothing for the app).
Every republication is recorded in the store's threshold history like any
other calibration, so the trust monitor and the judges read one truth.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp

from reag.calibration.errors import CalibrationError
from reag.calibration.store import CalibrationStore
from reag.judging.pinning import lend_examples
from reag.trust.from_store import promised_delta, thresholds_in_force
from reag.trust.monitor import deciding_tier
from reag.trust.provisional import (
    ProvisionalStanding,
    labels_to_certify,
    least_abstention,
    standing,
)
from reag.trust.store import AuditStore
from reag.v1 import events_pb2 as pb

log = logging.getLogger("reag.calibrator")

BORROWED = "borrowed"
"""The trigger under which borrowed, certified and withdrawn thresholds are recorded."""


def is_borrowed(thresholds: dict[int, pb.Threshold]) -> bool:
    """Thresholds fitted on other apps' items (provisional, or certified by this app's audits)."""
    return bool(thresholds) and all(t.pooled_apps for t in thresholds.values())


def _stamp(now: datetime | None) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(now or datetime.now(UTC))
    return stamp


def _republished(threshold: pb.Threshold, stamp: Timestamp) -> pb.Threshold:
    """A copy of ``threshold`` computed at ``stamp``, to be changed and recorded anew."""
    out = pb.Threshold()
    out.CopyFrom(threshold)
    out.computed_at.CopyFrom(stamp)
    return out


def _record(store: CalibrationStore, thresholds: list[pb.Threshold], source: str) -> None:
    versions = store.threshold_prompt_versions(source)
    for t in thresholds:  # each tier's scores stay keyed by the judge it was fitted on
        store.record_thresholds([t], prompt_version=versions.get(t.tier, ""), trigger=BORROWED)


def borrow_thresholds(
    store: CalibrationStore, app: str, lender: str, *, now: datetime | None = None
) -> list[pb.Threshold]:
    """Provisional thresholds for ``app``, the lender's in force; recorded, to be published.

    Refused when ``app`` already has thresholds of its own (fitted on its own
    labels: those promise its own risk, a borrowed one would promise less).
    """
    own = thresholds_in_force(store, app)
    if own and not is_borrowed(own):
        raise CalibrationError(
            f"{app!r} has thresholds fitted on its own labels; a borrowed one would replace "
            "a guarantee for this app with one for another"
        )
    source = thresholds_in_force(store, lender)
    if not source:
        raise CalibrationError(f"{lender!r} has no thresholds to lend: calibrate it first")
    if is_borrowed(source):
        raise CalibrationError(f"{lender!r} runs borrowed thresholds itself; lend from its lender")
    lend_examples(store, app, lender)
    stamp = _stamp(now)
    out = []
    for tier in sorted(source):
        t = _republished(source[tier], stamp)
        t.app = app
        t.provisional = True
        t.ClearField("pooled_apps")
        t.pooled_apps.append(lender)
        t.certified_by = 0
        t.withdrawn = False
        t.reason = (
            f"provisional: fitted on {t.n_calibration} labelled items of {lender}; its verdicts "
            f"carry {lender}'s risk bound, not {app}'s, until {app}'s audits certify it"
        )
        out.append(t)
    _record(store, out, lender)
    log.info("calibrator: %s borrows the thresholds of %s, provisional", app, lender)
    return out


def standing_of(
    store: CalibrationStore, audits: AuditStore, app: str
) -> ProvisionalStanding | None:
    """Where the app's provisional thresholds stand; None if it holds none."""
    thresholds = thresholds_in_force(store, app)
    if not is_borrowed(thresholds) or not all(t.provisional for t in thresholds.values()):
        return None
    if not any(t.has_threshold for t in thresholds.values()):
        return None
    first = thresholds[min(thresholds)]
    n_tiers = max(thresholds)
    delta = promised_delta(thresholds, first.delta)
    since = first.computed_at.ToDatetime(tzinfo=UTC)
    outcomes = []
    for audit in audits.audits(app, after=since):
        tier = deciding_tier(audit, thresholds, n_tiers)
        score = audit.score(tier) if tier is not None else None
        outcomes.append((score is not None, score is not None and score.verdict != audit.label))
    return standing(outcomes, first.alpha, delta)


def has_own_threshold(store: CalibrationStore, app: str) -> bool:
    """Whether the app's verdicts rest on a threshold that promises its own risk: fitted on
    its labels, or borrowed and certified by its audits. Else its audits come first in
    review (``reag.review.policy``): they are what settle it."""
    thresholds = thresholds_in_force(store, app)
    if not thresholds:
        return False
    if not is_borrowed(thresholds):
        return True
    return not any(t.provisional or t.withdrawn for t in thresholds.values())


def progress(store: CalibrationStore, audits: AuditStore, app: str) -> str | None:
    """Day one in plain words for a reviewer, or None when the app holds no provisional
    thresholds: labels so far, labels certification needs at the rate seen, and the least
    share of criteria any threshold must leave to review at the judge's error rate."""
    state = standing_of(store, audits, app)
    if state is None:
        return None
    thresholds = thresholds_in_force(store, app)
    lender = thresholds[min(thresholds)].pooled_apps[0]
    since = thresholds[min(thresholds)].computed_at.ToDatetime(tzinfo=UTC)
    labelled = audits.audits(app, after=since)
    wrong = sum(
        1 for a in labelled if (s := a.score(min(thresholds))) is not None and s.verdict != a.label
    )
    mu = wrong / len(labelled) if labelled else 0.0
    need = labels_to_certify(state.accepted, state.disagreements, state.alpha, state.delta)
    share = state.accepted / state.audits if state.audits else 1.0
    if need is None:
        outlook = (
            f"at the {state.risk:.0%} disagreement seen so far no number of audits certifies "
            "it; if that holds, the audits will withdraw it"
        )
    else:
        more = max(need - state.accepted, 0)
        total = round(more / share) if share > 0 else more
        outlook = (
            f"at the disagreement seen so far, certification needs about {more} more accepted "
            f"audits (about {total} more labels)"
        )
    return (
        f"{app} runs a provisional threshold borrowed from {lender}: {state.audits} audits "
        f"labelled, {state.accepted} of them accepted, {state.disagreements} disagreeing; "
        f"{outlook}. With the judge wrong on {mu:.0%} of audited criteria, any threshold "
        f"must leave at least {least_abstention(mu, state.alpha):.0%} of criteria to review "
        f"to keep the risk at α = {state.alpha:g}."
    )


def settle(
    store: CalibrationStore, audits: AuditStore, app: str, *, now: datetime | None = None
) -> list[pb.Threshold]:
    """Certify or withdraw the app's provisional thresholds if its audits now say so.

    Returns the republished thresholds (recorded, to be published), or nothing.
    """
    state = standing_of(store, audits, app)
    if state is None or state.provisional:
        return []
    thresholds = thresholds_in_force(store, app)
    stamp = _stamp(now)
    out = []
    for tier in sorted(thresholds):
        t = _republished(thresholds[tier], stamp)
        t.provisional = False
        if state.standing == "certified":
            t.certified_by = state.audits
            t.reason = (
                f"certified by {app}'s audits: bound {state.bound:.3f} ≤ α {state.alpha:g} "
                f"after {state.accepted} accepted of {state.audits} audits"
            )
        else:
            t.withdrawn = True
            t.has_threshold = False
            t.ClearField("threshold")
            t.reason = (
                f"withdrawn: {app}'s audits show the risk above α {state.alpha:g} "
                f"({state.disagreements} of {state.accepted} accepted audits disagree); "
                f"calibrate {app} on its own labels"
            )
        out.append(t)
    _record(store, out, thresholds[min(thresholds)].pooled_apps[0])
    log.warning(
        "calibrator: %s's provisional thresholds %s after %d audits",
        app,
        state.standing,
        state.audits,
    )
    return out
