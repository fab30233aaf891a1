"""One tier of the judge cascade as an object: its judges, the thresholds it holds, its steps.

``JudgeTier.decide`` judges one criterion and says what follows (accept,
escalate, abstain); ``JudgeTier.follow`` takes a threshold as it is published.
The judge service (services/judge) only decodes requests and thresholds,
calls these, and emits what they return; tests drive a tier with no broker.

A threshold counts only for the judge it was fitted on (``reag.judging.identity``),
checked on every use, not only on arrival: the judge's own identity can change
too (newly pinned example sets, another model). Log lines carry ids and
numbers, never queries, responses or profiles.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from reag.calibration.store import CalibrationStore
from reag.judging.cascade import Step, guarded_step, next_step
from reag.judging.decision import ThresholdBook, threshold_key
from reag.judging.exemplars import AnnotatorSets, draw_annotator_sets
from reag.judging.guards import guard_reason
from reag.judging.identity import refusal
from reag.judging.judge import TierJudge
from reag.judging.pinning import pinned_annotator_sets
from reag.judging.settings import CascadeSettings
from reag.judging.telemetry import (
    observe_guard,
    observe_refusal,
    observe_request,
    observe_step,
    observe_threshold,
)
from reag.llm.client import LLMClient
from reag.v1 import events_pb2 as pb

log = logging.getLogger("reag.judge")

AuditPick = Callable[[str], bool]
"""Whether a criterion id is audited (``reag.trust.audit.is_audit`` at the audit rate)."""


def _never(_criterion_id: str) -> bool:
    return False


class JudgeTier:
    """Tier ``tier`` of the cascade ``settings`` describes, on one model (``client``).

    ``store`` None: zero-shot annotators (tests, no database); else the app's pinned
    example sets. ``audit`` picks the audited criteria; only tier 1 picks, before any
    tier decides, so every tier sees the same pick. ``audit_provisional`` picks them for
    an app whose threshold in force is provisional (a higher rate: its audits settle it);
    both are uniform samples of the app's traffic, each over its own epoch.
    """

    def __init__(
        self,
        settings: CascadeSettings,
        tier: int,
        client: LLMClient,
        store: CalibrationStore | None,
        *,
        audit: AuditPick = _never,
        audit_provisional: AuditPick | None = None,
    ) -> None:
        self.settings = settings
        self.tier = tier
        self.client = client
        self.store = store
        self.audit = audit
        self.audit_provisional = audit_provisional or audit
        self.name = f"judge-tier{tier}"
        self.book = ThresholdBook(tier, client.model)
        self._judges: dict[str, TierJudge] = {}
        self._seen_apps: set[str] = set()
        self._refused: dict[str, str] = {}  # app -> the reason last logged

    @property
    def last(self) -> bool:
        """True for the cascade's last tier: what it cannot accept goes to review."""
        return self.tier >= self.settings.n_tiers

    async def decide(self, request: pb.JudgeRequest) -> Step:
        """Judge one criterion under the app's usable threshold; the step that follows."""
        app, tier = request.meta.app, self.tier
        if tier == 1 and not request.history:
            held = self.book.get(app)
            pick = self.audit_provisional if held is not None and held.provisional else self.audit
            request.audit = pick(request.criterion.criterion_id)
        observe_request(app, tier)
        guarded = guard_reason(request, check_decidable=self.settings.undecidable_guard)
        if guarded is not None:
            step = guarded_step(request, tier=tier, model=self.client.model, reason=guarded)
            observe_guard(app, tier, step)
            log.info(
                "%s: %s abstained before the model: %s",
                self.name,
                request.criterion.criterion_id,
                guarded,
            )
            return step
        judge = await self.judge_for(app)
        threshold = self.usable_threshold(app, judge)
        if self._first_sight(app):
            observe_threshold(app, tier, threshold)
        judgement = await judge.judge(request)
        step = next_step(request, judgement, threshold, tier=tier, n_tiers=self.settings.n_tiers)
        observe_step(app, tier, judgement, step)
        log.info(
            "%s: %s %s (confidence %.3f, %s)",
            self.name,
            request.criterion.criterion_id,
            step.decision,
            judgement.confidence,
            judgement.verdict,
        )
        return step

    def follow(self, threshold: pb.Threshold) -> bool:
        """Hold ``threshold`` if it is this tier's and newest; export and log it. True if held."""
        update = self.book.update(threshold)
        key = threshold_key(threshold.app, threshold.tier)
        if not update.applied:
            if threshold.tier == self.tier:
                log.warning("%s: ignored threshold %s: %s", self.name, key, update.reason)
            return False
        observe_threshold(threshold.app, self.tier, self.book.get(threshold.app))
        self._judges.pop(threshold.app, None)  # new thresholds may come with new examples
        if threshold.has_threshold:
            log.info("%s: threshold %s in force: %s", self.name, key, update.reason)
        else:
            log.warning(
                "%s: %s has no threshold, this tier accepts nothing for %s: %s",
                self.name,
                key,
                threshold.app,
                update.reason,
            )
        return True

    async def load(self, thresholds: Iterable[pb.Threshold], *, source: str) -> None:
        """Follow the thresholds read before the first request, then ``announce``."""
        for threshold in thresholds:
            self.follow(threshold)
        known = await asyncio.to_thread(self.store.apps) if self.store is not None else []
        self.announce(known, source=source)

    def announce(self, known_apps: Iterable[str], *, source: str) -> None:
        """Say at start, in a log line and the gauges, which apps this tier can accept for;
        ``source`` names where thresholds come from (the thresholds topic)."""
        apps = sorted({*self.book.apps(), *known_apps})
        for app in apps:
            observe_threshold(app, self.tier, self.book.get(app))
        held = {app: self.book.get(app) for app in apps}
        without = [app for app, t in held.items() if t is None or not t.has_threshold]
        if not self.book.apps():
            log.warning(
                "%s (%s): no threshold on %s for any app: this tier accepts nothing and every "
                "criterion escalates. Calibrate with `reag calibrate --labels FILE` (then "
                "publish) or let the calibrator learn from reviews.",
                self.name,
                self.client.model,
                source,
            )
        elif without:
            log.warning(
                "%s (%s): no threshold for %s: those apps' criteria all escalate",
                self.name,
                self.client.model,
                ", ".join(without),
            )

    async def judge_for(self, app: str) -> TierJudge:
        """The app's judge, on the calibration store's annotator sets (cached until a new
        threshold for the app arrives)."""
        judge = self._judges.get(app)
        if judge is None:
            annotators = await self._annotators(app)
            judge = TierJudge(self.client, self.settings.judge_config(self.tier), annotators)
            self._judges[app] = judge
        return judge

    def usable_threshold(self, app: str, judge: TierJudge) -> pb.Threshold | None:
        """The app's threshold if it was fitted on this very judge, else None (accept nothing)."""
        threshold = self.book.get(app)
        why = refusal(judge, threshold)
        if why is None:
            if self._refused.pop(app, None) is not None:
                log.info("%s: the threshold for %s matches this judge again", self.name, app)
            observe_refusal(app, self.tier, refused=False)
            return threshold
        if self._refused.get(app) != why:
            self._refused[app] = why
            log.warning("%s: refuses the threshold for %s: %s", self.name, app, why)
            observe_threshold(app, self.tier, None)
        observe_refusal(app, self.tier, refused=True)
        return None

    async def _annotators(self, app: str) -> AnnotatorSets:
        settings = self.settings
        n = settings.annotators_for(self.tier)
        if self.store is None:
            return draw_annotator_sets([], n, settings.examples, settings.seed)
        return await asyncio.to_thread(
            pinned_annotator_sets, self.store, app, n, settings.examples, settings.seed
        )

    def _first_sight(self, app: str) -> bool:
        if app in self._seen_apps:
            return False
        self._seen_apps.add(app)
        return True
