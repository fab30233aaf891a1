"""A judge tier's handlers: judge a criterion, accept / escalate / abstain; follow thresholds.

The cascade logic is ``reag.judging``; this module only wires it to the
tier's topics. Log lines carry ids and numbers, never queries, responses or
profiles.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from faststream.kafka import KafkaRouter

from reag.calibration.store import CalibrationStore
from reag.judging.cascade import next_step
from reag.judging.decision import ThresholdBook, threshold_key
from reag.judging.exemplars import AnnotatorSets, draw_annotator_sets
from reag.judging.identity import refusal
from reag.judging.judge import TierJudge
from reag.judging.pinning import pinned_annotator_sets
from reag.judging.telemetry import (
    observe_refusal,
    observe_request,
    observe_step,
    observe_threshold,
)
from reag.llm.client import LLMClient
from reag.trust.audit import is_audit
from reag.v1 import events_pb2 as pb
from services.judge.settings import JudgeSettings
from services.kit.delivery import Emit, consume
from services.kit.topology import (
    ABSTAINS,
    JUDGE_TIER,
    SERVICES,
    THRESHOLDS,
    VERDICTS,
    suffixed,
)

log = logging.getLogger("reag.judge")


@dataclass
class JudgeDeps:
    """What a tier needs besides settings. ``store`` None: zero-shot annotators (tests, no DB)."""

    client: LLMClient
    store: CalibrationStore | None
    book: ThresholdBook
    _judges: dict[str, TierJudge] = field(default_factory=dict)
    _seen_apps: set[str] = field(default_factory=set)
    _refused: dict[str, str] = field(default_factory=dict)  # app -> the reason last logged

    @classmethod
    def build(
        cls, settings: JudgeSettings, client: LLMClient, store: CalibrationStore | None
    ) -> JudgeDeps:
        return cls(client, store, ThresholdBook(settings.tier, client.model))

    async def judge_for(self, app: str, settings: JudgeSettings) -> TierJudge:
        """The app's judge, on the calibration store's annotator sets (cached until reload)."""
        judge = self._judges.get(app)
        if judge is None:
            annotators = await self._annotators(app, settings)
            judge = TierJudge(self.client, settings.judge_config(settings.tier), annotators)
            self._judges[app] = judge
        return judge

    async def _annotators(self, app: str, settings: JudgeSettings) -> AnnotatorSets:
        n = settings.annotators_for(settings.tier)
        if self.store is None:
            return draw_annotator_sets([], n, settings.examples, settings.seed)
        return await asyncio.to_thread(
            pinned_annotator_sets,
            self.store,
            app,
            n,
            settings.examples,
            settings.seed,
        )

    def reload(self, app: str) -> None:
        """Forget the app's judge: new thresholds may come with newly pinned examples."""
        self._judges.pop(app, None)

    def usable_threshold(self, app: str, judge: TierJudge, service: str) -> pb.Threshold | None:
        """The app's threshold if it was fitted on this very judge, else None (accept nothing).

        Checked on every use, not only on arrival: the judge's own identity can change too
        (newly pinned example sets, another model), and a threshold held from before must
        then stop counting.
        """
        threshold = self.book.get(app)
        why = refusal(judge, threshold)
        if why is None:
            if self._refused.pop(app, None) is not None:
                log.info("%s: the threshold for %s matches this judge again", service, app)
            observe_refusal(app, judge.config.tier, refused=False)
            return threshold
        if self._refused.get(app) != why:
            self._refused[app] = why
            log.warning("%s: refuses the threshold for %s: %s", service, app, why)
            observe_threshold(app, judge.config.tier, None)
        observe_refusal(app, judge.config.tier, refused=True)
        return None

    def first_sight(self, app: str) -> bool:
        if app in self._seen_apps:
            return False
        self._seen_apps.add(app)
        return True


def apply_threshold(settings: JudgeSettings, deps: JudgeDeps, threshold: pb.Threshold) -> bool:
    """Hold ``threshold`` if it is this tier's and newest; export and log it. True if applied."""
    update = deps.book.update(threshold)
    key = threshold_key(threshold.app, threshold.tier)
    if not update.applied:
        if threshold.tier == settings.tier:
            log.warning("%s: ignored threshold %s: %s", settings.service, key, update.reason)
        return False
    observe_threshold(threshold.app, settings.tier, deps.book.get(threshold.app))
    deps.reload(threshold.app)
    if threshold.has_threshold:
        log.info("%s: threshold %s in force: %s", settings.service, key, update.reason)
    else:
        log.warning(
            "%s: %s has no threshold, this tier accepts nothing for %s: %s",
            settings.service,
            key,
            threshold.app,
            update.reason,
        )
    return True


def announce(settings: JudgeSettings, deps: JudgeDeps, known_apps: list[str]) -> None:
    """Say at start, in a log line and the gauges, which apps this tier can accept for."""
    apps = sorted({*deps.book.apps(), *known_apps})
    for app in apps:
        observe_threshold(app, settings.tier, deps.book.get(app))
    held = {app: deps.book.get(app) for app in apps}
    without = [app for app, t in held.items() if t is None or not t.has_threshold]
    if not deps.book.apps():
        log.warning(
            "%s (%s): no threshold on %s for any app: this tier accepts nothing and every "
            "criterion escalates. Calibrate with `reag calibrate --labels FILE` (then publish) "
            "or let the calibrator learn from reviews.",
            settings.service,
            deps.client.model,
            THRESHOLDS + settings.topic_suffix,
        )
    elif without:
        log.warning(
            "%s (%s): no threshold for %s: those apps' criteria all escalate",
            settings.service,
            deps.client.model,
            ", ".join(without),
        )


def build_router(settings: JudgeSettings, deps: JudgeDeps) -> KafkaRouter:
    tier, suffix = settings.tier, settings.topic_suffix
    spec = suffixed(SERVICES[settings.service], suffix)
    depth = settings.n_tiers
    onward = (JUDGE_TIER[tier + 1] if tier < depth else ABSTAINS) + suffix
    router = KafkaRouter()

    @consume(
        router,
        spec,
        JUDGE_TIER[tier] + suffix,
        pb.JudgeRequest,
        max_event_bytes=settings.kafka.max_event_bytes,
        delivery=settings.delivery,
        group_id=f"{spec.name}{suffix}",
    )
    async def judge_criterion(request: pb.JudgeRequest) -> list[Emit]:
        app = request.meta.app
        if tier == 1 and not request.history:
            request.audit = is_audit(request.criterion.criterion_id, settings.audit_rate)
        observe_request(app, tier)
        judge = await deps.judge_for(app, settings)
        threshold = deps.usable_threshold(app, judge, spec.name)
        if deps.first_sight(app):
            observe_threshold(app, tier, threshold)
        judgement = await judge.judge(request)
        step = next_step(request, judgement, threshold, tier=tier, n_tiers=depth)
        observe_step(app, tier, judgement, step)
        log.info(
            "%s: %s %s (confidence %.3f, %s)",
            spec.name,
            request.criterion.criterion_id,
            step.decision,
            judgement.confidence,
            judgement.verdict,
        )
        key = request.meta.case_id
        emits = []
        if step.verdict is not None:
            emits.append(Emit(VERDICTS + suffix, step.verdict, key))
        if step.escalation is not None:
            emits.append(Emit(onward, step.escalation, key))
        if step.abstain is not None:
            emits.append(Emit(onward, step.abstain, key))
        return emits

    @consume(
        router,
        spec,
        THRESHOLDS + suffix,
        pb.Threshold,
        max_event_bytes=settings.kafka.max_event_bytes,
        delivery=settings.delivery,
        broadcast=True,
    )
    async def follow_threshold(threshold: pb.Threshold) -> None:
        apply_threshold(settings, deps, threshold)

    return router
