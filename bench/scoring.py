"""Scoring: every local judge model on the example app's labelled set, once, into committed files.

Each model judges every expert-labelled item of examples/nutrition/calibration.jsonl
with the production judge (prompt v4, N annotators × K examples pinned exactly as
a fresh store pins them, so the demo's judges have the same identity). One JSON
line per item goes to examples/nutrition/scores/<model>.<prompt tag>.jsonl as
soon as it is scored, so an interrupted run resumes where it stopped and a
finished file is never recomputed. The folder is the app's `calibration_scores`:
`reag demo` and `reag calibrate --labels --stored-scores` import a file only
after judging a random sample of it again (reag.calibration_run.snapshot).

The lines are ``ScoreRecord``s (``reag calibrate --scores`` reads them) with
what bench.verdicts needs besides: each annotator's distribution, the
criterion's polarity, seconds, tokens, calls, the weights' sha256 and the full
prompt version. Items that serve as an annotator's example are marked, so the
statistics keep the example pool apart.

A judge of fewer annotators needs no scoring of its own: annotator j's prompt
does not depend on N, so its file is cut from the N = 3 one
(``reag.calibration_run.snapshot.first_annotators``), for each N in REAG_BENCH_DERIVE
(default 1, the embedded cascade's tiers of one annotator). The demo checks
such a file exactly as any other: a random sample judged again must match it.

Knobs: REAG_BENCH_MODELS (comma-separated, default the three instruct models),
REAG_BENCH_N / REAG_BENCH_K (default 3 / 3), REAG_BENCH_LIMIT (first N items only),
REAG_BENCH_DERIVE (comma-separated smaller N, default 1; empty: none).
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

if TYPE_CHECKING:
    from reag.calibration.store import CalibrationItem
    from reag.judging.exemplars import AnnotatorSets

ROOT = Path(__file__).resolve().parents[1]
LABELS = ROOT / "examples" / "nutrition" / "calibration.jsonl"
SCORES = ROOT / "examples" / "nutrition" / "scores"
MODELS = (
    "local:smollm2-135m-instruct",
    "local:qwen2.5-coder-0.5b-instruct",
    "local:qwen2.5-coder-1.5b-instruct",
)


def scores_path(model: str, prompt_version: str) -> Path:
    """One file per (model, prompt version): a new prompt or example set starts a new file."""
    from reag.calibration_run.snapshot import snapshot_name

    return SCORES / snapshot_name(model, prompt_version)


def pinned_sets(ns: Sequence[int], k: int) -> tuple[list[CalibrationItem], list[AnnotatorSets]]:
    """The labelled items and, per N, the sets a fresh store pins: the demo's judges get these."""
    from reag.calibration.store import CalibrationStore
    from reag.calibration_run.files import read_labelled
    from reag.judging.pinning import pinned_annotator_sets

    items = read_labelled(LABELS)
    app = items[0].app
    with tempfile.TemporaryDirectory() as tmp:
        store = CalibrationStore.open(f"sqlite:///{tmp}/pins.db")
        store.add_items(items)
        sets = [pinned_annotator_sets(store, app, n, k, 0) for n in ns]
        return store.items(app), sets


async def score_model(model: str, tier: int, n: int, k: int, limit: int | None) -> Path:
    from reag.calibration_run.snapshot import read_snapshot, snapshot_line
    from reag.judging.judge import JudgeConfig, TierJudge
    from reag.llm import Caller, LLMSettings
    from reag.llm.registry import make_client

    items, (annotators,) = pinned_sets([n], k)
    client = make_client(model, caller=Caller("bench"), settings=LLMSettings(local_url=None))
    judge = TierJudge(client, JudgeConfig(tier=tier, n_annotators=n, k_examples=k), annotators)
    examples = {e.item_id for s in annotators.sets for e in s}
    path = scores_path(model, judge.prompt_version)
    done = read_snapshot(path)
    todo = [i for i in items[:limit] if i.item_id not in done]
    print(f"{model}: {len(done)} scored before, {len(todo)} to score -> {path.relative_to(ROOT)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeRemainingColumn(),
    )
    with Progress(*columns) as progress, path.open("a", encoding="utf-8") as out:
        task = progress.add_task(model.removeprefix("local:"), total=len(todo), rate="")
        spent = 0.0
        for count, item in enumerate(todo, start=1):
            started = time.perf_counter()
            judgement = await judge.judge(item.request, exclude_item=item.item_id)
            seconds = time.perf_counter() - started
            spent += seconds
            line = snapshot_line(
                judge, item, judgement, seconds=seconds, example=item.item_id in examples
            )
            out.write(json.dumps(line) + "\n")
            out.flush()
            progress.update(task, advance=1, rate=f"{spent / count:.1f} s/item")
    await client.aclose()
    return path


def derive_smaller(model: str, source: Path, n: int, stored_n: int, k: int) -> Path | None:
    """The file of ``model`` at ``n`` annotators, cut from its file at ``stored_n``."""
    from reag.calibration_run.snapshot import first_annotators, read_snapshot
    from reag.judging.judge import JudgeConfig, TierJudge
    from reag.llm import Caller, LLMSettings
    from reag.llm.registry import make_client

    lines = read_snapshot(source)
    if not lines:
        return None
    _, (small, large) = pinned_sets([n, stored_n], k)
    if small.sets != large.sets[:n]:
        raise SystemExit(f"{model}: the sets of N={n} are not the first of N={stored_n}")
    # No call is made: the client only names the model for the identity, so it points at
    # a model server that is never asked instead of loading the weights here.
    unused = LLMSettings(local_url="http://127.0.0.1:9")
    client = make_client(model, caller=Caller("bench"), settings=unused)
    judge = TierJudge(client, JudgeConfig(tier=1, n_annotators=n, k_examples=k), small)
    path = scores_path(model, judge.prompt_version)
    text = "".join(
        json.dumps(first_annotators(line, judge, source.name)) + "\n" for line in lines.values()
    )
    path.write_text(text, encoding="utf-8")
    print(f"{model}: N={n} cut from N={stored_n} on {len(lines)} items -> {path.relative_to(ROOT)}")
    return path


def run() -> None:
    models = [m for m in os.environ.get("REAG_BENCH_MODELS", ",".join(MODELS)).split(",") if m]
    n = int(os.environ.get("REAG_BENCH_N", "3"))
    k = int(os.environ.get("REAG_BENCH_K", "3"))
    limit = int(os.environ["REAG_BENCH_LIMIT"]) if os.environ.get("REAG_BENCH_LIMIT") else None
    derive = [int(d) for d in os.environ.get("REAG_BENCH_DERIVE", "1").split(",") if d.strip()]
    for model in models:
        tier = MODELS.index(model) + 1 if model in MODELS else 1
        path = asyncio.run(score_model(model, tier, n, k, limit))
        for smaller in (d for d in derive if d < n):
            derive_smaller(model, path, smaller, n, k)
