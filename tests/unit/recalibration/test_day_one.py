"""Day one without a broker: a new app borrows a lender's thresholds, marked provisional, on
the lender's judge; its audits certify them when the judge is right for it and withdraw them
when it is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from reag.calibration.errors import CalibrationError
from reag.calibration.store import CalibrationStore
from reag.calibration_run.clients import build_judges
from reag.judging.identity import JudgeIdentity, refusal
from reag.recalibration import Recalibrator
from reag.recalibration.day_one import borrow_thresholds, standing_of
from reag.trust.from_store import thresholds_in_force
from reag.v1 import events_pb2 as pb
from tests.unit.recalibration.test_recalibrator import CASCADE, SPEC, clients

LENDER, NEW = "lender-app", "new-app"


@pytest.fixture
def store(tmp_path: Path) -> CalibrationStore:
    return CalibrationStore.open(f"sqlite:///{tmp_path / 'c.db'}")


def audit(app: str, i: int, *, judge_right: bool) -> pb.Review:
    """A labelled audit whose every tier said YES at 0.99; the expert agrees or not."""
    from tests.unit.judging.conftest import make_request

    marker = "SURE-YES" if i % 2 == 0 else "SURE-NO"
    item = make_request(f"answer {i}: {marker}", app=app, case=f"{app}-a{i}")
    item.audit = True
    verdict = pb.LABEL_YES if i % 2 == 0 else pb.LABEL_NO
    for tier in (1, 2, 3):
        item.history.add(tier=tier, verdict=verdict, confidence=0.99, has_threshold=True)
    wrong = pb.LABEL_NO if verdict == pb.LABEL_YES else pb.LABEL_YES
    event = pb.Review(criterion_id=item.criterion.criterion_id)
    event.label = verdict if judge_right else wrong
    event.meta.CopyFrom(item.meta)
    event.item.CopyFrom(item)
    return event


async def lender_calibrated(store: CalibrationStore) -> None:
    recalibrator = Recalibrator(store, clients(), CASCADE, SPEC, every=6)
    for i in range(6):
        await recalibrator.on_review(audit(LENDER, i, judge_right=True))
    # Cascade mode: tier 1 accepts every item, so the later tiers see none and hold none.
    assert thresholds_in_force(store, LENDER)[1].has_threshold


async def test_a_borrowed_threshold_is_provisional_and_fits_the_new_apps_judge(
    store: CalibrationStore,
) -> None:
    await lender_calibrated(store)
    borrowed = borrow_thresholds(store, NEW, LENDER)
    assert [t.tier for t in borrowed] == [1, 2, 3]
    assert all(t.provisional and list(t.pooled_apps) == [LENDER] for t in borrowed)
    assert all(t.app == NEW for t in borrowed)
    assert borrowed[0].has_threshold
    new_judges = build_judges(store, NEW, clients(), CASCADE)
    lender_judges = build_judges(store, LENDER, clients(), CASCADE)
    for new, lender, threshold in zip(new_judges, lender_judges, borrowed, strict=True):
        assert JudgeIdentity.of_judge(new) == JudgeIdentity.of_judge(lender)
        assert refusal(new, threshold) is None  # the new app's judge accepts under it
    assert thresholds_in_force(store, NEW)[1].provisional
    state = standing_of(store, Recalibrator(store, clients(), CASCADE, SPEC, every=6).audits, NEW)
    assert state is not None
    assert state.standing == "provisional"
    with pytest.raises(CalibrationError, match="borrowed"):
        borrow_thresholds(store, LENDER, NEW)  # NEW runs borrowed thresholds: no chains
    with pytest.raises(CalibrationError, match="own labels"):
        borrow_thresholds(store, LENDER, "another")  # the lender has its own


async def audit_until_settled(
    recalibrator: Recalibrator, *, judge_right: bool, most: int
) -> list[pb.Threshold]:
    """Feed NEW's audits one by one until the calibrator republishes its thresholds."""
    for i in range(most):
        published = await recalibrator.on_review(audit(NEW, i, judge_right=judge_right))
        if published:
            return published
    return []


async def test_audits_that_agree_certify_the_borrowed_threshold(store: CalibrationStore) -> None:
    await lender_calibrated(store)
    borrow_thresholds(store, NEW, LENDER)
    recalibrator = Recalibrator(store, clients(), CASCADE, SPEC, every=10_000)
    published = await audit_until_settled(recalibrator, judge_right=True, most=30)
    assert [t.tier for t in published] == [1, 2, 3]
    assert all(not t.provisional and t.certified_by > 0 for t in published)
    assert published[0].has_threshold
    assert "certified" in published[0].reason
    in_force = thresholds_in_force(store, NEW)
    assert not in_force[1].provisional
    assert standing_of(store, recalibrator.audits, NEW) is None  # settled: nothing pending
    assert await recalibrator.on_review(audit(NEW, 99, judge_right=True)) == []


async def test_audits_that_disagree_withdraw_it(store: CalibrationStore) -> None:
    await lender_calibrated(store)
    borrow_thresholds(store, NEW, LENDER)
    recalibrator = Recalibrator(store, clients(), CASCADE, SPEC, every=10_000)
    published = await audit_until_settled(recalibrator, judge_right=False, most=40)
    assert published, "forty disagreeing audits never withdrew the threshold"
    assert all(t.withdrawn and not t.has_threshold and not t.provisional for t in published)
    assert "withdrawn" in published[0].reason
    assert not thresholds_in_force(store, NEW)[1].has_threshold


async def test_own_labels_retire_the_borrowed_threshold_only_with_a_threshold_of_their_own(
    store: CalibrationStore,
) -> None:
    await lender_calibrated(store)
    borrow_thresholds(store, NEW, LENDER)
    strict = SPEC.__class__(alpha=0.5, delta=0.2, min_accepted=50)  # no fit on 4 labels
    keeps = Recalibrator(store, clients(), CASCADE, strict, every=4)
    for i in range(4):
        await keeps.on_review(audit(NEW, 100 + i, judge_right=True))
    assert list(thresholds_in_force(store, NEW)[1].pooled_apps) == [LENDER]  # still borrowed
    retires = Recalibrator(store, clients(), CASCADE, SPEC, every=4)
    published: list[pb.Threshold] = []
    for i in range(4):
        published += await retires.on_review(audit(NEW, 200 + i, judge_right=True))
    own = [t for t in published if not t.pooled_apps]
    assert own, "a fit on its own labels with a threshold never retired the borrowed one"
    assert own[0].has_threshold
    assert not thresholds_in_force(store, NEW)[1].pooled_apps


def test_reag_calibrate_pooled_records_provisional_thresholds(
    store: CalibrationStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio
    import json

    import typer
    from typer.testing import CliRunner

    from shell.cli.calibrate import register

    asyncio.run(lender_calibrated(store))
    monkeypatch.setenv("REAG_STORE_DSN", f"sqlite:///{tmp_path / 'c.db'}")
    cli = typer.Typer()
    cli.callback()(lambda: None)
    register(cli)
    runner = CliRunner()
    refused = runner.invoke(cli, ["calibrate", "--pooled", LENDER])
    assert refused.exit_code == 2
    assert "--app" in refused.output
    out = runner.invoke(cli, ["calibrate", "--app", NEW, "--pooled", LENDER, "--json"])
    assert out.exit_code == 0, out.output
    shown = json.loads(out.output)
    assert shown["published"] == 0
    assert all(t["provisional"] and t["pooled_apps"] == [LENDER] for t in shown["thresholds"])
    assert thresholds_in_force(store, NEW)[1].provisional
    again = runner.invoke(cli, ["calibrate", "--app", LENDER, "--pooled", NEW])
    assert again.exit_code == 2  # the lender has its own thresholds; NEW's are borrowed


async def test_review_progress_in_plain_words_and_audits_first_until_certified(
    store: CalibrationStore, tmp_path: Path
) -> None:
    from reag.recalibration.day_one import has_own_threshold, progress
    from shell.cli.review import day_one_lines

    await lender_calibrated(store)
    assert has_own_threshold(store, LENDER)
    assert (
        progress(store, Recalibrator(store, clients(), CASCADE, SPEC, every=6).audits, NEW) is None
    )
    borrow_thresholds(store, NEW, LENDER)
    assert not has_own_threshold(store, NEW)  # provisional: its audits come first in review
    recalibrator = Recalibrator(store, clients(), CASCADE, SPEC, every=10_000)
    await recalibrator.on_review(audit(NEW, 0, judge_right=True))
    line = progress(store, recalibrator.audits, NEW)
    assert line is not None
    assert "borrowed from lender-app: 1 audits labelled, 1 of them accepted, 0 disagreeing" in line
    assert "certification needs about" in line
    assert "at least 0% of criteria to review" in line
    assert day_one_lines(f"sqlite:///{tmp_path / 'c.db'}") == [f"day one: {line}"]
    for i in range(1, 30):
        if await recalibrator.on_review(audit(NEW, i, judge_right=True)):
            break
    assert has_own_threshold(store, NEW)  # certified: it promises the app's own risk now
    assert progress(store, recalibrator.audits, NEW) is None
