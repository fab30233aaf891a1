"""Scoring calibration items with every tier's judge, each (tier, item) once, resumably.

A judge's score on a calibration item is stored under (app, tier, model,
prompt version, item) and never recomputed: production judges cost money,
and an interrupted run must keep what it paid for. Only the calls
calibration needs are made: in cascade and system modes tier t+1 is scored
only on the items tiers 1..t do not accept (each partial fit is exactly the
final fit's first tiers, since a tier's fit depends only on the tiers below
it). Where two tiers run the same model with the same prompts, the lower
tier's score is copied rather than recomputed (it would be the same call);
the copy keeps the call's cost, because in production that tier really pays
for it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from reag.calibration.cascade import ABSTAIN, route
from reag.calibration.errors import CalibrationError
from reag.calibration.scores import ScoreRecord
from reag.calibration.store import CalibrationItem, CalibrationStore, StoredScore
from reag.calibration_run.clients import build_judges
from reag.calibration_run.files import ingest_labelled
from reag.calibration_run.fitting import FitSpec
from reag.judging.judge import TierJudge
from reag.judging.settings import CascadeSettings
from reag.llm.client import LLMClient


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
    stored = await asyncio.to_thread(store.scores, app, tier, model, version)
    other_tiers = await asyncio.to_thread(store.scores_any_tier, app, model, version)
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
        await asyncio.to_thread(store.put_scores, copies)
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
        # One by one: an interrupted run keeps what it paid for.
        await asyncio.to_thread(store.put_scores, [score])
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


async def score_for_calibration(
    store: CalibrationStore,
    judges: Sequence[TierJudge],
    app: str,
    items: Sequence[CalibrationItem],
    spec: FitSpec,
    *,
    score_all: bool = False,
    stats: ScoringStats | None = None,
    progress: Progress | None = None,
) -> list[ScoreRecord]:
    """The score records calibration needs: every tier on every item when ``score_all``
    or in independent mode, else each tier only on what the tiers below leave to it."""
    stats = stats if stats is not None else ScoringStats()
    everything = score_all or spec.mode == "independent"
    records: list[ScoreRecord] = []
    reach = list(items)
    for t, judge in enumerate(judges, start=1):
        if judge.config.tier != t:
            raise CalibrationError(f"judge #{t} is configured as tier {judge.config.tier}")
        records += await score_tier(store, judge, app, reach, stats=stats, progress=progress)
        if t == len(judges) or everything:
            continue
        partial = spec.fit(records, t, depth=len(judges))
        by_item = {(r.item_id, r.tier): r.confidence for r in records}
        confidences = np.array(
            [[by_item.get((i.item_id, s), np.nan) for s in range(1, t + 1)] for i in items]
        )
        decided = route(partial, confidences, item_ids=[i.item_id for i in items])
        reach = [i for i, d in zip(items, decided.tolist(), strict=True) if d == ABSTAIN]
    return records


# Scoring every tier on every item fits nothing on the way, so any spec serves.
_SCORE_ALL = FitSpec()


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
    chosen, mine = await ingest_labelled(store, path, app)
    judges = await asyncio.to_thread(build_judges, store, chosen, clients, settings)
    wanted = {i.item_id for i in mine[:limit]}
    stored = await asyncio.to_thread(store.items, chosen)
    in_store = [i for i in stored if i.item_id in wanted]
    return await score_for_calibration(
        store, judges, chosen, in_store, _SCORE_ALL, score_all=True, stats=stats, progress=progress
    )
