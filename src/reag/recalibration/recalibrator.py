"""The calibrator's policy: which labels count, when to refit, audits and trust epochs.

Recalibration scores only (tier, item) pairs the store lacks, with the same
prompts the judges use, so its cost grows with the new labels, not the set.
Log lines carry ids and numbers, never queries, responses or profiles.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from reag import metrics
from reag.calibration.store import EXCHANGEABLE, CalibrationStore, item_from_review
from reag.calibration_run.calibrate import LabelledCalibration, run_calibration
from reag.calibration_run.clients import build_judges
from reag.calibration_run.fitting import FitSpec
from reag.judging.decision import threshold_key
from reag.judging.identity import refusal
from reag.judging.judge import TierJudge
from reag.judging.settings import CascadeSettings
from reag.llm.client import LLMClient
from reag.recalibration.day_one import is_borrowed, settle
from reag.trust.from_store import app_report, thresholds_in_force
from reag.trust.monitor import ALL, TrustReport, deciding_tier
from reag.trust.store import AuditStore, audit_from_review
from reag.trust.telemetry import count_audit, observe_report
from reag.v1 import events_pb2 as pb

log = logging.getLogger("reag.calibrator")


@dataclass(frozen=True)
class Recalibrator:
    """An app's calibration kept current from reviews.

    ``clients``: one per tier, cheapest first, built as the judges' are; ``cascade``:
    the annotator settings the judges share (a threshold holds only for their
    prompts); ``spec``: the fit, whose α and δ the trust monitor also checks
    against; ``every``: recalibrate after this many new exchangeable labels (M).
    """

    store: CalibrationStore
    clients: Sequence[LLMClient]
    cascade: CascadeSettings
    spec: FitSpec
    every: int
    # One refit of an app at a time: with reviews in flight together, each would
    # otherwise see M new labels and start its own refit of the same app.
    _refits: dict[str, asyncio.Lock] = field(default_factory=dict, repr=False, compare=False)

    @property
    def audits(self) -> AuditStore:
        return AuditStore(self.store.sessions)

    async def on_review(self, review: pb.Review) -> list[pb.Threshold]:
        """Take one review (it must carry the reviewed item); the new thresholds if this
        review completed M new labels and the app was refitted, else an empty list."""
        item = item_from_review(review)
        report = await asyncio.to_thread(self.store.add_items, [item])
        settled = await asyncio.to_thread(self.record_audit, review)
        app = item.app
        total = await asyncio.to_thread(self.store.count_items, app)
        metrics.CALIBRATION_ITEMS.labels(app).set(total)
        if settled:
            await asyncio.to_thread(self.watch_trust, app)  # a new epoch begins
        if not report.added:
            return settled
        if item.source == "review":
            log.info(
                "calibrator: %s reviewed abstention %s joins the annotators' example pool, "
                "not the risk estimate (not exchangeable with traffic)",
                app,
                item.item_id,
            )
            return settled
        async with self._refits.setdefault(app, asyncio.Lock()):
            # Counted under the lock: a refit that ran while this review waited took its
            # label in, and the count starts again from that refit.
            due = await asyncio.to_thread(self.new_labels, app)
            borrowed = is_borrowed(await asyncio.to_thread(thresholds_in_force, self.store, app))
            if due < self.every or (borrowed and due % self.every):
                log.info(
                    "calibrator: %s labelled %s (%d/%d new labels before recalibrating)",
                    app,
                    item.item_id,
                    due,
                    self.every,
                )
                return settled
            if borrowed:
                return settled + await self.retire_borrowed(app)
            result = await self.recalibrate(app)
            await asyncio.to_thread(self.watch_trust, app)  # a new epoch begins
        return result.thresholds

    async def retire_borrowed(self, app: str) -> list[pb.Threshold]:
        """Fit an app that runs borrowed thresholds on its own labels; keep the fit only if
        it holds a threshold at every tier the borrowed ones did (a fit that accepts less
        would retire a working provisional or certified threshold for abstention)."""
        borrowed = await asyncio.to_thread(thresholds_in_force, self.store, app)
        result = await run_calibration(
            self.store,
            self.clients,
            self.cascade,
            self.spec,
            app=app,
            trigger="reviews",
            record=False,
        )
        own = {t.tier for t in result.thresholds if t.has_threshold}
        if not own >= {tier for tier, t in borrowed.items() if t.has_threshold}:
            log.info(
                "calibrator: %s's own %d labels hold thresholds at tiers %s only; it keeps "
                "the borrowed ones",
                app,
                result.calibration.n_items,
                sorted(own) or "none",
            )
            return []
        await asyncio.to_thread(
            self.store.record_thresholds,
            result.thresholds,
            prompt_version=result.prompt_version,
            trigger="reviews",
        )
        log.info("calibrator: %s is calibrated on its own labels; its borrowed one retires", app)
        await asyncio.to_thread(self.watch_trust, app)
        return result.thresholds

    def new_labels(self, app: str) -> int:
        """Exchangeable items added since the app was last calibrated (all, if it never was).

        A reviewed abstention does not count: it never enters the fit, so it cannot change it.
        """
        store = self.store
        return store.count_items(
            app, added_after=store.last_calibrated_at(app), sources=EXCHANGEABLE
        )

    async def recalibrate(self, app: str, *, trigger: str = "reviews") -> LabelledCalibration:
        """Refit the app on every exchangeable label in the store; recorded in its history."""
        result = await run_calibration(
            self.store, self.clients, self.cascade, self.spec, app=app, trigger=trigger
        )
        log.info(
            "calibrator: recalibrated %s on %d exchangeable items, %d reviewed abstentions "
            "left out (%s): %s",
            app,
            result.calibration.n_items,
            result.reviewed_abstentions,
            result.stats.line(),
            "; ".join(
                f"tier {t.tier} " + (f"λ̂={t.threshold:.3f}" if t.has_threshold else "none")
                for t in result.thresholds
            ),
        )
        return result

    def record_audit(self, review: pb.Review) -> list[pb.Threshold]:
        """Keep a labelled audit with every tier's score, count it, and refresh the gauges;
        the thresholds republished if it settled the app's provisional ones (``day_one``)."""
        audit = audit_from_review(review)
        if audit is None:
            return []
        app = review.meta.app or review.item.meta.app
        if not self.audits.add(app, audit):
            return []
        thresholds = thresholds_in_force(self.store, app)
        count_audit(app, deciding_tier(audit, thresholds, max(thresholds, default=0)))
        self.watch_trust(app)
        return settle(self.store, self.audits, app)

    def watch_trust(self, app: str) -> TrustReport:
        """Recompute the app's live risk bounds and drift tests and export them as gauges."""
        report = app_report(
            self.store,
            self.audits,
            app,
            alpha=self.spec.alpha,
            delta=self.spec.delta,
            n_tiers=len(self.clients),
        )
        observe_report(report)
        whole = report.risks[ALL]
        log.info(
            "calibrator: trust %s: %d audits this epoch, whole accepted set %d/%d disagree, "
            "bound %.3f vs α %.3f: %s",
            app,
            report.audits,
            whole.disagreements,
            whole.audits,
            whole.bound,
            whole.alpha,
            whole.state,
        )
        return report

    def watch_all(self) -> None:
        """Refresh the gauges of every app with audits (at start, before any review)."""
        for app in self.audits.apps():
            self.watch_trust(app)

    def current_thresholds(self) -> list[pb.Threshold]:
        """The newest stored threshold of every (app, tier) that still fits the judge the tier
        runs now; one fitted on another model, prompt, N, K or example set is left out (a
        judge would refuse it anyway) and said in a log line, so nobody mistakes it for in
        force."""
        fresh: list[pb.Threshold] = []
        judges: dict[str, list[TierJudge]] = {}
        for threshold in self.store.latest_thresholds():
            if threshold.app not in judges:
                judges[threshold.app] = build_judges(
                    self.store, threshold.app, self.clients, self.cascade
                )
            tiers = judges[threshold.app]
            if not 1 <= threshold.tier <= len(tiers):
                continue
            why = refusal(tiers[threshold.tier - 1], threshold)
            if why is not None:
                log.warning(
                    "calibrator: not republishing the stored threshold for %s: %s",
                    threshold_key(threshold.app, threshold.tier),
                    why,
                )
                continue
            fresh.append(threshold)
        return fresh
