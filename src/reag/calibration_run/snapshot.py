"""Stored judge scores on a labelled set, imported only after a random sample is judged again.

Scoring an app's labelled set with a local judge takes most of an hour on a
laptop, and it gives the same numbers every time: the same weights, prompt
and examples give the same logits. So the scores are made once (``make
bench``, bench/scoring.py) and shipped beside the labelled set, one file per
model and prompt version. A file is only as good as the claim that it came
from this very judge, though, so before a single line is used, a few items
drawn at random (from the operating system's entropy, so no file can be
prepared for the draw) are judged again and must match their stored scores;
the file's judge identity (model, weights sha256, prompt version with N, K
and the example digest) must match the running judge too. A file that fails
either check is not imported at all, and calibration scores the set itself.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reag.calibration.store import CalibrationItem, CalibrationStore, StoredScore
from reag.judging.identity import JudgeIdentity
from reag.judging.judge import Judgement, TierJudge, decide
from reag.judging.prompt import Condition

DEFAULT_VERIFY = 3
TOLERANCE = 1e-6  # llama.cpp's logits repeat to the bit; this only absorbs JSON rounding


def snapshot_name(model: str, prompt_version: str) -> str:
    """The file name of a model's scores under one prompt version (one way, shared with bench)."""
    return f"{model.partition(':')[2] or model}.{prompt_version.replace('/', '.')}.jsonl"


@dataclass(frozen=True, slots=True)
class SnapshotReport:
    tier: int
    path: Path
    imported: int
    verified: int
    trusted: bool
    reason: str

    def line(self) -> str:
        if self.trusted:
            return (
                f"tier {self.tier}: {self.imported} stored scores from {self.path.name}, "
                f"{self.verified} re-judged at random and equal"
            )
        return f"tier {self.tier}: stored scores not used ({self.reason}); scoring instead"


def read_snapshot(path: Path) -> dict[str, dict[str, Any]]:
    """A scores file's lines by item id; a missing file reads as empty."""
    lines: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return lines
    for text in path.read_text(encoding="utf-8").splitlines():
        if text.strip():
            line = json.loads(text)
            lines[str(line["item_id"])] = line
    return lines


def snapshot_line(
    judge: TierJudge,
    item: CalibrationItem,
    judgement: Judgement,
    *,
    seconds: float,
    example: bool,
) -> dict[str, Any]:
    """One item's line of a scores file: what ``import_snapshot`` checks and imports (a
    ``ScoreRecord`` for ``reag calibrate --scores``), and what bench.verdicts needs besides."""
    return {
        "item_id": item.item_id,
        "tier": judge.config.tier,
        "verdict": judgement.verdict,
        "confidence": judgement.confidence,
        "label": item.label,
        "persona_category": item.persona_category,
        "cost_usd": judgement.cost_usd,
        "model": judge.model,
        "weights_sha256": JudgeIdentity.of_judge(judge).weights_sha256,
        "prompt_version": judge.prompt_version,
        "polarity": Condition.of(item.request.criterion.text).polarity,
        "annotator_yes": list(judgement.p_yes),
        "example": example,
        "seconds": round(seconds, 3),
        "prompt_tokens": judgement.usage.prompt_tokens,
        "cached_tokens": judgement.usage.cached_tokens,
        "n_calls": judgement.n_calls,
    }


def first_annotators(line: dict[str, Any], judge: TierJudge, source: str) -> dict[str, Any]:
    """A stored line of a larger judge, cut to ``judge``'s N annotators: its own line.

    Exact because annotator j's prompt does not depend on N (the example draw
    takes the sets in turn, so N = 1 gets the first set of N = 3; the caller
    checks that the sets agree): the same logits come out, and the
    confidence is recomputed from the first N distributions by ``decide``.
    Seconds and tokens are the larger judge's cut in proportion (marked
    ``derived_from``): that part of a group call is not timed apart.
    """
    n = judge.config.n_annotators
    stored_n = len(line["annotator_yes"])
    if n > stored_n:
        raise ValueError(f"a line of {stored_n} annotators cannot give {n}")
    p_yes = [float(p) for p in line["annotator_yes"][:n]]
    verdict, confidence = decide(p_yes)
    share = n / stored_n
    return {
        **line,
        "tier": judge.config.tier,
        "verdict": verdict,
        "confidence": confidence,
        "prompt_version": judge.prompt_version,
        "annotator_yes": p_yes,
        "example": bool(line["example"]) and line["item_id"] in judge.annotators.item_ids,
        "seconds": round(float(line["seconds"]) * share, 3),
        "prompt_tokens": round(int(line["prompt_tokens"]) * share),
        "cached_tokens": round(int(line["cached_tokens"]) * share),
        "n_calls": round(int(line["n_calls"]) * share),
        "derived_from": source,
    }


def _stored(line: dict[str, Any], app: str, judge: TierJudge) -> StoredScore:
    return StoredScore(
        app=app,
        tier=judge.config.tier,
        model=judge.model,
        prompt_version=judge.prompt_version,
        item_id=str(line["item_id"]),
        verdict="YES" if line["verdict"] == "YES" else "NO",
        confidence=float(line["confidence"]),
        annotator_yes=tuple(float(p) for p in line["annotator_yes"]),
        method="logprobs",
        cost_usd=float(line.get("cost_usd", 0.0)),
        prompt_tokens=int(line.get("prompt_tokens", 0)),
        completion_tokens=0,
        latency_s=float(line.get("seconds", 0.0)),
        n_calls=int(line.get("n_calls", judge.config.n_annotators)),
    )


def _mismatch(
    lines: dict[str, dict[str, Any]], judge: TierJudge, by_id: dict[str, CalibrationItem]
) -> str | None:
    """Why the file cannot be this judge's on these items, or None."""
    weights = JudgeIdentity.of_judge(judge).weights_sha256
    for item_id, line in lines.items():
        if line.get("weights_sha256", "") != weights:
            return "made with other weights than this judge's"
        if line.get("prompt_version") != judge.prompt_version:
            return "made under another prompt version"
        item = by_id.get(item_id)
        if item is not None and line.get("label") != item.label:
            return f"item {item_id} has another expert label there"
    if not any(i in by_id for i in lines):
        return "no item of this labelled set is in it"
    return None


async def _judged_again(
    judge: TierJudge, lines: dict[str, dict[str, Any]], draw: Sequence[CalibrationItem]
) -> str | None:
    """The first drawn item whose fresh judgement differs from the file's, said plainly."""
    for item in draw:
        again = await judge.judge(item.request, exclude_item=item.item_id)
        stored = lines[item.item_id]
        if again.verdict != stored["verdict"] or not math.isclose(
            again.confidence, float(stored["confidence"]), abs_tol=TOLERANCE
        ):
            return (
                f"item {item.item_id} judged again gives {again.verdict} at "
                f"{again.confidence:.6f}, the file says {stored['verdict']} at "
                f"{float(stored['confidence']):.6f}"
            )
    return None


async def import_snapshot(
    store: CalibrationStore,
    app: str,
    judge: TierJudge,
    items: Sequence[CalibrationItem],
    directory: Path,
    *,
    verify: int = DEFAULT_VERIFY,
    rng: random.Random | None = None,
) -> SnapshotReport | None:
    """Import ``judge``'s stored scores on ``items`` from ``directory`` if they prove its own.

    None when there is no file for this judge. Scores already in the store are
    left as they are; ``rng`` is for tests (default: the system's entropy).
    """
    path = directory / snapshot_name(judge.model, judge.prompt_version)
    if not path.is_file():
        return None
    tier = judge.config.tier
    by_id = {item.item_id: item for item in items}
    try:
        lines = read_snapshot(path)
    except (OSError, ValueError, KeyError) as exc:
        return SnapshotReport(tier, path, 0, 0, False, f"unreadable: {exc}")
    usable = [by_id[i] for i in lines if i in by_id]
    draw = (rng or random.SystemRandom()).sample(usable, min(verify, len(usable)))
    why = _mismatch(lines, judge, by_id) or await _judged_again(judge, lines, draw)
    if why is not None:
        return SnapshotReport(tier, path, 0, 0, False, why)
    held = await asyncio.to_thread(store.scores, app, tier, judge.model, judge.prompt_version)
    fresh = [_stored(lines[i.item_id], app, judge) for i in usable if i.item_id not in held]
    await asyncio.to_thread(store.put_scores, fresh)
    return SnapshotReport(tier, path, len(fresh), len(draw), True, "")
