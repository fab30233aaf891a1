"""Calibrating the cascade from expert labels: ingest, score every tier (once), fit, record.

Used by ``reag calibrate --labels FILE`` and by the calibrator service. A
judge's score on a calibration item is stored under (app, tier, model, prompt
version, item) and never recomputed. Only the calls calibration needs are
made: in cascade and system modes tier t+1 is scored only on the items tiers
1..t do not accept (each partial fit is exactly the final fit's first tiers,
since a tier's fit depends only on the tiers below it). Where two tiers run
the same model with the same prompts, the lower tier's score is copied rather
than recomputed (it would be the same call); the copy keeps the call's cost,
because in production that tier really pays for it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from google.protobuf.timestamp_pb2 import Timestamp
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reag import metrics
from reag.calibration.cascade import ABSTAIN, CascadeCalibration, Mode, calibrate_table, route
from reag.calibration.errors import CalibrationError
from reag.calibration.fixed_sequence import DEFAULT_GRID, Grid
from reag.calibration.scaling import DEFAULT_TAU
from reag.calibration.scores import Label, ScoreRecord, pivot
from reag.calibration.store import CalibrationItem, CalibrationStore, StoredScore
from reag.judging.judge import TierJudge
from reag.judging.pinning import pinned_annotator_sets
from reag.judging.settings import N_TIERS, CascadeSettings
from reag.llm.client import Caller, LLMClient
from reag.v1 import events_pb2 as pb


class LabelledFileError(CalibrationError):
    """A labelled-set JSONL file could not be read; the message names the file and line."""


class LabelledLine(BaseModel):
    """One line of a labelled set (e.g. examples/nutrition/calibration.jsonl)."""

    model_config = ConfigDict(extra="ignore")

    item_id: str = Field(min_length=1)
    app: str = Field(min_length=1)
    persona_category: str = ""
    query: str
    criterion: str = Field(min_length=1)
    actual_response: str
    label: Label
    explanation: str = ""
    test_objective: str = ""
    expected_results: str = ""
    persona_name: str = ""
    persona: str = Field(default="", description="Free-text persona description, if any.")

    def item(self) -> CalibrationItem:
        request = pb.JudgeRequest(
            criterion=pb.Criterion(criterion_id=self.item_id, text=self.criterion),
            query=self.query,
            actual_response=self.actual_response,
            persona=pb.Persona(
                category_id=self.persona_category,
                category_name=self.persona_name or self.persona_category,
                description=self.persona,
            ),
            test_objective=self.test_objective,
            expected_results=self.expected_results,
            n_criteria=1,
        )
        request.meta.case_id, request.meta.app = self.item_id, self.app
        request.meta.schema_version = pb.SCHEMA_VERSION_1
        return CalibrationItem(
            app=self.app,
            item_id=self.item_id,
            label=self.label,
            persona_category=self.persona_category,
            request=request,
            source="file",
            explanation=self.explanation,
        )


def read_labelled(path: Path) -> list[CalibrationItem]:
    """Every item of a labelled JSONL file; any bad line is an error naming it."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise LabelledFileError(f"cannot read labelled set {path}: {exc.strerror}") from exc
    items: list[CalibrationItem] = []
    seen: dict[tuple[str, str], int] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            parsed = LabelledLine.model_validate(json.loads(line))
        except json.JSONDecodeError as exc:
            raise LabelledFileError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from exc
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'line'}: {e['msg']}" for e in exc.errors()
            )
            raise LabelledFileError(f"{path}:{lineno}: {problems}") from exc
        key = (parsed.app, parsed.item_id)
        if key in seen:
            raise LabelledFileError(
                f"{path}:{lineno}: item {parsed.item_id!r} already appears on line {seen[key]}"
            )
        seen[key] = lineno
        items.append(parsed.item())
    if not items:
        raise LabelledFileError(f"{path}: no labelled items in the file")
    return items


def select_app(items: Sequence[CalibrationItem], app: str | None) -> str:
    apps = sorted({i.app for i in items})
    if app is not None:
        if app not in apps:
            raise LabelledFileError(f"no item of app {app!r} in the labelled set; it has {apps}")
        return app
    if len(apps) > 1:
        raise LabelledFileError(f"the labelled set holds several apps {apps}; name one with --app")
    return apps[0]


@dataclass(slots=True)
class ScoringStats:
    """What scoring cost this time. ``calls`` counts LLM calls actually made now."""

    scored: int = 0
    reused: int = 0
    copied: int = 0
    calls: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0
    per_tier_scored: dict[int, int] = field(default_factory=dict)

    def line(self) -> str:
        return (
            f"scored {self.scored} (tier, item) pairs with {self.calls} LLM calls "
            f"({self.cost_usd:.6f} USD) in {self.seconds:.1f} s; reused {self.reused} stored "
            f"scores, copied {self.copied} from a lower tier running the same model and prompt"
        )


Progress = Callable[[int, int, int], None]
"""Called as (tier, done, total) while a tier is being scored."""


async def score_tier(
    store: CalibrationStore,
    judge: TierJudge,
    app: str,
    items: Sequence[CalibrationItem],
    *,
    stats: ScoringStats,
    concurrency: int = 4,
    progress: Progress | None = None,
) -> list[ScoreRecord]:
    """Stored or fresh scores of ``judge``'s tier on ``items`` (fresh ones are stored)."""
    tier, model, version = judge.config.tier, judge.model, judge.prompt_version
    stored = store.scores(app, tier, model, version)
    other_tiers = store.scores_any_tier(app, model, version)
    records: dict[str, ScoreRecord] = {}
    missing: list[CalibrationItem] = []
    copies: list[StoredScore] = []
    for item in items:
        if item.item_id in stored:
            records[item.item_id] = stored[item.item_id].record(item)
            stats.reused += 1
        elif item.item_id in other_tiers:
            source = other_tiers[item.item_id]
            copy = dataclasses.replace(source, tier=tier, copied_from_tier=source.tier)
            copies.append(copy)
            records[item.item_id] = copy.record(item)
        else:
            missing.append(item)
    if copies:
        store.put_scores(copies)
        stats.copied += len(copies)
    gate = asyncio.Semaphore(max(1, concurrency))
    done = 0

    async def one(item: CalibrationItem) -> None:
        nonlocal done
        async with gate:
            judgement = await judge.judge(item.request, exclude_item=item.item_id)
        score = StoredScore(
            app=app,
            tier=tier,
            model=model,
            prompt_version=version,
            item_id=item.item_id,
            verdict=judgement.verdict,
            confidence=judgement.confidence,
            annotator_yes=judgement.p_yes,
            method=judgement.method,
            cost_usd=judgement.cost_usd,
            prompt_tokens=judgement.usage.prompt_tokens,
            completion_tokens=judgement.usage.completion_tokens,
            latency_s=judgement.latency_s,
            n_calls=judgement.n_calls,
        )
        store.put_scores([score])  # one by one: an interrupted run keeps what it paid for
        records[item.item_id] = score.record(item)
        stats.scored += 1
        stats.calls += judgement.n_calls
        stats.cost_usd += judgement.cost_usd
        stats.per_tier_scored[tier] = stats.per_tier_scored.get(tier, 0) + 1
        done += 1
        if progress is not None:
            progress(tier, done, len(missing))

    started = time.perf_counter()
    await asyncio.gather(*(one(item) for item in missing))
    stats.seconds += time.perf_counter() - started
    return [records[item.item_id] for item in items]


def _fit(
    records: Sequence[ScoreRecord],
    n_tiers: int,
    *,
    alpha: float,
    delta: float,
    mode: Mode,
    tau: int,
    grid: Grid,
) -> CascadeCalibration:
    """Fit tiers 1..n_tiers of an ``N_TIERS`` cascade from the records so far.

    Under system mode each tier is tested at δ/N_TIERS whatever the number of
    tiers fit so far, so a partial fit's tiers equal the full fit's.
    """
    tier_delta = delta * n_tiers / N_TIERS if mode == "system" else delta
    return calibrate_table(
        pivot(records, n_tiers=n_tiers),
        alpha=alpha,
        delta=tier_delta,
        mode=mode,
        tau=tau,
        grid=grid,
    )


async def score_for_calibration(
    store: CalibrationStore,
    judges: Sequence[TierJudge],
    app: str,
    items: Sequence[CalibrationItem],
    *,
    alpha: float,
    delta: float,
    mode: Mode = "cascade",
    tau: int = DEFAULT_TAU,
    grid: Grid = DEFAULT_GRID,
    score_all: bool = False,
    stats: ScoringStats | None = None,
    progress: Progress | None = None,
) -> list[ScoreRecord]:
    """The score records calibration needs: every tier on every item when ``score_all``
    or in independent mode, else each tier only on what the tiers below leave to it."""
    stats = stats if stats is not None else ScoringStats()
    records: list[ScoreRecord] = []
    reach = list(items)
    for t, judge in enumerate(judges, start=1):
        if judge.config.tier != t:
            raise CalibrationError(f"judge #{t} is configured as tier {judge.config.tier}")
        if score_all or mode == "independent":
            reach = list(items)
        records += await score_tier(store, judge, app, reach, stats=stats, progress=progress)
        if t == len(judges) or score_all or mode == "independent":
            continue
        partial = _fit(records, t, alpha=alpha, delta=delta, mode=mode, tau=tau, grid=grid)
        by_item = {(r.item_id, r.tier): r.confidence for r in records}
        confidences = np.array(
            [[by_item.get((i.item_id, s), np.nan) for s in range(1, t + 1)] for i in items]
        )
        decided = route(partial, confidences, item_ids=[i.item_id for i in items])
        reach = [i for i, d in zip(items, decided.tolist(), strict=True) if d == ABSTAIN]
    return records


def thresholds_from(
    calibration: CascadeCalibration,
    app: str,
    models: Sequence[str],
    computed_at: datetime | None = None,
) -> list[pb.Threshold]:
    """One pb.Threshold per tier, as published on reag.thresholds.v1."""
    stamp = Timestamp()
    stamp.FromDatetime(computed_at or datetime.now(UTC))
    out: list[pb.Threshold] = []
    for t, fit in enumerate(calibration.tiers, start=1):
        threshold = pb.Threshold(
            app=app,
            tier=t,
            model=models[t - 1],
            has_threshold=fit.threshold is not None,
            alpha=calibration.alpha,
            delta=fit.delta,
            n_calibration=fit.n,
            n_accepted=fit.n_accepted,
            calibration_hash=calibration.calibration_hash,
            mode=calibration.mode,
            temperature=fit.temperature,
            reason=fit.reason,
        )
        if fit.threshold is not None:
            threshold.threshold = fit.threshold
            threshold.risk = fit.risk or 0.0
            threshold.risk_upper = fit.risk_upper or 0.0
        threshold.computed_at.CopyFrom(stamp)
        out.append(threshold)
    return out


@dataclass(frozen=True, slots=True)
class LabelledCalibration:
    """A finished calibration of one app: its fit, its thresholds, what scoring cost."""

    app: str
    calibration: CascadeCalibration
    thresholds: list[pb.Threshold]
    records: list[ScoreRecord]
    models: tuple[str, ...]
    prompt_version: str
    stats: ScoringStats

    def model_note(self) -> str:
        """Says plainly when the tiers are one model: then the cascade cannot add signal."""
        if len(set(self.models)) == 1:
            return (
                f"all {len(self.models)} tiers run the same model, {self.models[0]}: "
                "escalation asks the same judge again. Name different models per tier "
                "with REAG_TIER_MODELS (cheapest first)."
            )
        return "tier models: " + " → ".join(self.models)


def build_judges(
    store: CalibrationStore, app: str, clients: Sequence[LLMClient], settings: CascadeSettings
) -> list[TierJudge]:
    """The cascade's judges for ``app``, on the pinned annotator example sets."""
    annotators = pinned_annotator_sets(
        store, app, settings.annotators, settings.examples, settings.seed
    )
    return [
        TierJudge(client, settings.judge_config(t), annotators)
        for t, client in enumerate(clients, start=1)
    ]


def make_tier_clients(settings: CascadeSettings, service: str) -> list[LLMClient]:
    """One client per tier, charged to (service, tier), from REAG_TIER_MODELS."""
    from reag.llm.registry import make_client

    return [
        make_client(settings.model_for(t), caller=Caller(service=service, tier=str(t)))
        for t in range(1, N_TIERS + 1)
    ]


async def calibrate_app(
    store: CalibrationStore,
    app: str,
    judges: Sequence[TierJudge],
    *,
    alpha: float,
    delta: float,
    mode: Mode = "cascade",
    tau: int = DEFAULT_TAU,
    grid: Grid = DEFAULT_GRID,
    trigger: str = "cli",
    score_all: bool = False,
    progress: Progress | None = None,
) -> LabelledCalibration:
    """Score what is missing, fit every tier, and record the thresholds in the history."""
    items = store.items(app)
    if not items:
        raise CalibrationError(
            f"the calibration store has no labelled items for app {app!r}; add some with "
            "`reag calibrate --labels FILE` or through reviews"
        )
    stats = ScoringStats()
    records = await score_for_calibration(
        store,
        judges,
        app,
        items,
        alpha=alpha,
        delta=delta,
        mode=mode,
        tau=tau,
        grid=grid,
        score_all=score_all,
        stats=stats,
        progress=progress,
    )
    calibration = _fit(
        records, len(judges), alpha=alpha, delta=delta, mode=mode, tau=tau, grid=grid
    )
    models = tuple(j.model for j in judges)
    thresholds = thresholds_from(calibration, app, models)
    version = judges[0].prompt_version if judges else ""
    store.record_thresholds(thresholds, prompt_version=version, trigger=trigger)
    metrics.CALIBRATION_RUNS.labels(trigger).inc()
    return LabelledCalibration(app, calibration, thresholds, records, models, version, stats)


async def ingest_and_calibrate(
    path: Path,
    store: CalibrationStore,
    clients: Sequence[LLMClient],
    settings: CascadeSettings,
    *,
    app: str | None = None,
    alpha: float,
    delta: float,
    mode: Mode = "cascade",
    tau: int = DEFAULT_TAU,
    grid: Grid = DEFAULT_GRID,
    score_all: bool = False,
    progress: Progress | None = None,
) -> LabelledCalibration:
    """``reag calibrate --labels``: add the file's items to the store, then ``calibrate_app``."""
    items = read_labelled(path)
    chosen = select_app(items, app)
    store.add_items([i for i in items if i.app == chosen])
    judges = build_judges(store, chosen, clients, settings)
    return await calibrate_app(
        store,
        chosen,
        judges,
        alpha=alpha,
        delta=delta,
        mode=mode,
        tau=tau,
        grid=grid,
        trigger="cli",
        score_all=score_all,
        progress=progress,
    )


async def score_labelled_file(
    path: Path,
    store: CalibrationStore,
    clients: Sequence[LLMClient],
    settings: CascadeSettings,
    *,
    app: str | None = None,
    progress: Progress | None = None,
    stats: ScoringStats | None = None,
    limit: int | None = None,
) -> list[ScoreRecord]:
    """Ingest a labelled file and score every tier on every one of its items.

    Stored scores are reused, so a second run makes no LLM call; scoring every
    tier on everything lets any mode and α be fit from the result. ``limit``
    scores only the file's first items (all are ingested, so the annotators'
    examples are drawn from the whole set either way).
    """
    items = read_labelled(path)
    chosen = select_app(items, app)
    mine = [i for i in items if i.app == chosen]
    store.add_items(mine)
    judges = build_judges(store, chosen, clients, settings)
    wanted = {i.item_id for i in mine[:limit]}
    in_store = [i for i in store.items(chosen) if i.item_id in wanted]
    return await score_for_calibration(
        store,
        judges,
        chosen,
        in_store,
        alpha=0.5,
        delta=0.5,
        score_all=True,
        stats=stats,
        progress=progress,
    )


def score_labelled_set(
    path: Path,
    *,
    app: str | None = None,
    settings: CascadeSettings | None = None,
    store: CalibrationStore | None = None,
    clients: Sequence[LLMClient] | None = None,
) -> list[ScoreRecord]:
    """``reag calibrate --labels FILE``: every tier's scores on a labelled set.

    Tier models and annotators come from ``CascadeSettings`` (REAG_TIER_MODELS,
    REAG_ANNOTATORS, ...), the store from REAG_STORE_DSN / REAG_STATE_DIR.
    """
    settings = settings or CascadeSettings()
    store = store or CalibrationStore.open(settings.resolved_store_dsn())
    tier_clients = list(clients) if clients is not None else make_tier_clients(settings, "cli")
    return asyncio.run(score_labelled_file(path, store, tier_clients, settings, app=app))
