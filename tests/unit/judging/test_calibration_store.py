"""The durable calibration store: items, reviews, pinned annotator sets, threshold history."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from reag.calibration.store import CalibrationStore, item_from_review
from reag.calibration_run.files import read_labelled
from reag.judging.pinning import pinned_annotator_sets
from reag.v1 import events_pb2 as pb

from .conftest import make_request
from .labelled_data import write_labelled


@pytest.fixture
def store(tmp_path: Path) -> CalibrationStore:
    return CalibrationStore.open(f"sqlite:///{tmp_path / 'reag.db'}")


def test_items_are_added_once_and_relabelled_in_place(
    store: CalibrationStore, tmp_path: Path
) -> None:
    items = read_labelled(write_labelled(tmp_path / "l.jsonl", 8))
    report = store.add_items(items)
    assert len(report.added) == 8
    again = store.add_items(items)
    assert again.added == []
    assert len(again.unchanged) == 8
    flipped = dataclasses.replace(items[0], label="NO" if items[0].label == "YES" else "YES")
    assert store.add_items([flipped]).relabelled == [items[0].item_id]
    stored = {i.item_id: i for i in store.items("nutrition")}
    assert stored[items[0].item_id].label == flipped.label
    assert stored[items[1].item_id].request.actual_response == items[1].request.actual_response
    assert store.count_items("nutrition") == 8
    assert store.apps() == ["nutrition"]


def test_a_review_becomes_an_item_keyed_by_criterion_without_history(
    store: CalibrationStore,
) -> None:
    request = make_request()
    request.history.add(tier=1, confidence=0.7)
    review = pb.Review(
        criterion_id="case-1/c0",
        label=pb.LABEL_NO,
        reviewer="ana",
        comment="no sugar warning",
        item=request,
    )
    review.meta.CopyFrom(request.meta)
    item = item_from_review(review)
    assert (item.item_id, item.label, item.source, item.persona_category) == (
        "case-1/c0",
        "NO",
        "review",
        "t2d",
    )
    assert len(item.request.history) == 0
    assert store.add_items([item]).added == ["case-1/c0"]
    assert store.add_items([item_from_review(review)]).added == []  # dedup by criterion id


def test_annotator_sets_are_pinned_once_the_pool_allows_and_stay(
    store: CalibrationStore, tmp_path: Path
) -> None:
    items = read_labelled(write_labelled(tmp_path / "l.jsonl", 40))
    store.add_items(items[:6])  # fewer than N*K = 15: drawn fresh, not pinned
    small = pinned_annotator_sets(store, "nutrition", 5, 3, 0)
    store.add_items(items[6:20])
    pinned = pinned_annotator_sets(store, "nutrition", 5, 3, 0)
    assert pinned.digest() != small.digest()
    store.add_items(items[20:])
    assert pinned_annotator_sets(store, "nutrition", 5, 3, 0).digest() == pinned.digest()
    assert pinned_annotator_sets(store, "nutrition", 5, 3, 1).digest() != pinned.digest()


def test_threshold_history_keeps_every_threshold_and_knows_the_latest(
    store: CalibrationStore,
) -> None:
    def t(tier: int, value: float, seconds: int) -> pb.Threshold:
        th = pb.Threshold(
            app="nutrition",
            tier=tier,
            model="fake:j",
            has_threshold=True,
            threshold=value,
            mode="cascade",
            calibration_hash="h",
        )
        th.computed_at.seconds = seconds
        return th

    store.record_thresholds([t(1, 0.9, 100), t(2, 0.8, 100)], prompt_version="v", trigger="cli")
    store.record_thresholds([t(1, 0.95, 200)], prompt_version="v", trigger="reviews")
    latest = {th.tier: th.threshold for th in store.latest_thresholds("nutrition")}
    assert latest == pytest.approx({1: 0.95, 2: 0.8})
    assert [th.threshold for th in store.threshold_history("nutrition", 1)] == pytest.approx(
        [0.9, 0.95]
    )
    last = store.last_calibrated_at("nutrition")
    assert last is not None
    assert last.timestamp() == 200
