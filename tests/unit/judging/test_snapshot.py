"""Stored judge scores are imported only when they prove to be this judge's own."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from reag.calibration.store import CalibrationStore
from reag.calibration_run.calibrate import run_calibration
from reag.calibration_run.clients import build_judges
from reag.calibration_run.files import read_labelled
from reag.calibration_run.fitting import FitSpec
from reag.calibration_run.snapshot import import_snapshot, snapshot_line, snapshot_name
from reag.judging.judge import TierJudge
from reag.judging.settings import CascadeSettings
from reag.llm.client import LLMClient
from reag.llm.scripted import FakeProvider

from .labelled_data import marker_script, write_labelled

SETTINGS = CascadeSettings(tier_models="", tier_annotators="", annotators=3, examples=2)
SPEC = FitSpec(alpha=0.2, delta=0.1, min_accepted=10)


def providers() -> list[FakeProvider]:
    return [FakeProvider(model=f"fake:tier{t}", label_script=marker_script()) for t in (1, 2, 3)]


async def make_snapshot(tmp_path: Path, labels: Path) -> tuple[Path, list[TierJudge]]:
    """Score every item with each tier, as bench.scoring does, into a folder of files."""
    store = CalibrationStore.open(f"sqlite:///{tmp_path / 'maker.db'}")
    items = read_labelled(labels)
    store.add_items(items)
    judges = build_judges(store, "nutrition", [LLMClient(p) for p in providers()], SETTINGS)
    folder = tmp_path / "scores"
    folder.mkdir()
    for judge in judges:
        lines = [
            snapshot_line(
                judge,
                item,
                await judge.judge(item.request, exclude_item=item.item_id),
                seconds=1.0,
                example=False,
            )
            for item in store.items("nutrition")
        ]
        path = folder / snapshot_name(judge.model, judge.prompt_version)
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder, judges


async def test_a_snapshot_of_this_judge_is_imported_and_calibration_then_scores_nothing(
    tmp_path: Path,
) -> None:
    labels = write_labelled(tmp_path / "labels.jsonl", 40)
    folder, _ = await make_snapshot(tmp_path, labels)
    store = CalibrationStore.open(f"sqlite:///{tmp_path / 'demo.db'}")
    fakes = providers()
    result = await run_calibration(
        store, [LLMClient(p) for p in fakes], SETTINGS, SPEC, stored_scores=folder, labels=labels
    )
    assert [r.trusted for r in result.snapshots] == [True, True, True]
    assert [r.verified for r in result.snapshots] == [3, 3, 3]
    assert result.snapshots[0].imported == 40
    assert result.stats.scored == 0  # every score came from the files
    assert [len(p.calls) for p in fakes] == [3 * 3] * 3  # only the re-judged sample
    fresh = await run_calibration(
        CalibrationStore.open(f"sqlite:///{tmp_path / 'fresh.db'}"),
        [LLMClient(p) for p in providers()],
        SETTINGS,
        SPEC,
        labels=labels,
    )
    assert [t.threshold for t in result.thresholds] == [t.threshold for t in fresh.thresholds]


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("confidence", 0.51, "judged again gives"),
        ("prompt_version", "judge-prompt-v3/n3k2s0/x", "another prompt version"),
        ("weights_sha256", "ab" * 32, "other weights"),
        ("label", "MAYBE", "another expert label"),
    ],
)
async def test_a_snapshot_that_is_not_this_judges_is_not_imported(
    tmp_path: Path, field: str, value: object, reason: str
) -> None:
    labels = write_labelled(tmp_path / "labels.jsonl", 40)
    folder, judges = await make_snapshot(tmp_path, labels)
    path = folder / snapshot_name(judges[0].model, judges[0].prompt_version)
    lines = [json.loads(text) for text in path.read_text().splitlines()]
    lines[7][field] = value
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    store = CalibrationStore.open(f"sqlite:///{tmp_path / 'demo.db'}")
    store.add_items(read_labelled(labels))
    judge = build_judges(store, "nutrition", [LLMClient(providers()[0])], SETTINGS)[0]
    # Every item re-judged, so a change to any one of them is caught.
    report = await import_snapshot(
        store, "nutrition", judge, store.items("nutrition"), folder, verify=40,
        rng=random.Random(0),
    )  # fmt: skip
    assert report is not None
    assert not report.trusted
    assert reason in report.reason
    assert store.scores("nutrition", 1, judge.model, judge.prompt_version) == {}


async def test_no_file_for_this_judge_means_no_report(tmp_path: Path) -> None:
    labels = write_labelled(tmp_path / "labels.jsonl", 12)
    store = CalibrationStore.open(f"sqlite:///{tmp_path / 'demo.db'}")
    store.add_items(read_labelled(labels))
    judge = build_judges(store, "nutrition", [LLMClient(providers()[0])], SETTINGS)[0]
    empty = tmp_path / "none"
    empty.mkdir()
    assert await import_snapshot(store, "nutrition", judge, store.items("nutrition"), empty) is None


def prompt_hash_script(prompt, labels):  # type: ignore[no-untyped-def]
    """P(YES) from the whole prompt: every annotator (its own examples) answers differently."""
    import hashlib

    text = prompt if isinstance(prompt, str) else "\x00".join(m.content for m in prompt)
    p = 0.05 + 0.9 * int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return {"YES": p, "NO": 1 - p}


async def test_a_file_cut_to_fewer_annotators_is_that_judges_own(tmp_path: Path) -> None:
    """A judge of N = 1 gets, on every item, exactly the first annotator of a stored N = 3
    line, so its file can be cut from the N = 3 one and still pass the re-judged sample."""
    from reag.calibration_run.snapshot import first_annotators, read_snapshot

    labels = write_labelled(tmp_path / "labels.jsonl", 24)
    store = CalibrationStore.open(f"sqlite:///{tmp_path / 'maker.db'}")
    store.add_items(read_labelled(labels))
    items = store.items("nutrition")
    client = LLMClient(FakeProvider(model="fake:tier1", label_script=prompt_hash_script))
    wide = CascadeSettings(annotators=3, examples=2)
    narrow = CascadeSettings(annotators=1, examples=2)
    (large,) = build_judges(store, "nutrition", [client], wide)
    (small,) = build_judges(store, "nutrition", [client], narrow)
    folder = tmp_path / "scores"
    folder.mkdir()
    source = folder / snapshot_name(large.model, large.prompt_version)
    lines = [
        snapshot_line(
            large,
            i,
            await large.judge(i.request, exclude_item=i.item_id),
            seconds=3.0,
            example=i.item_id in large.annotators.item_ids,
        )
        for i in items
    ]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    cut = [first_annotators(line, small, source.name) for line in lines]
    (folder / snapshot_name(small.model, small.prompt_version)).write_text(
        "".join(json.dumps(line) + "\n" for line in cut)
    )
    disagree = 0
    for item, line, full in zip(items, cut, lines, strict=True):
        fresh = await small.judge(item.request, exclude_item=item.item_id)
        assert (line["verdict"], line["confidence"]) == (fresh.verdict, fresh.confidence)
        assert line["prompt_version"] == small.prompt_version
        assert line["seconds"] == 1.0
        disagree += line["verdict"] != full["verdict"]
    assert disagree > 0  # the cut is a different judge, not a copy of the N = 3 verdicts
    assert sum(line["example"] for line in cut) == len(small.annotators.item_ids)
    report = await import_snapshot(
        CalibrationStore.open(f"sqlite:///{tmp_path / 'demo.db'}"),
        "nutrition",
        small,
        items,
        folder,
        rng=random.Random(1),
    )
    assert report is not None
    assert report.trusted
    assert report.imported == len(items)
    assert read_snapshot(folder / snapshot_name(small.model, small.prompt_version))
