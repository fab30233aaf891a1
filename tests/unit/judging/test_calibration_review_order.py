"""A replayed older review does not relabel a calibration item that a newer review set."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from reag.calibration.store import CalibrationStore, item_from_review
from reag.v1 import events_pb2 as pb

from .conftest import make_request


def review(label: pb.Label.ValueType, minutes: int, reviewer: str = "ana") -> pb.Review:
    request = make_request()
    event = pb.Review(criterion_id="case-1/c0", label=label, reviewer=reviewer, item=request)
    event.meta.CopyFrom(request.meta)
    event.reviewed_at.FromDatetime(datetime(2026, 1, 2, tzinfo=UTC) + timedelta(minutes=minutes))
    return event


def label(store: CalibrationStore) -> str:
    (item,) = store.items("nutrition")
    return item.label


def test_an_older_review_replayed_later_leaves_the_newer_label(tmp_path: Path) -> None:
    store = CalibrationStore.open(f"sqlite:///{tmp_path / 'reag.db'}")
    store.add_items([item_from_review(review(pb.LABEL_NO, 10))])
    assert store.add_items([item_from_review(review(pb.LABEL_YES, 20))]).relabelled
    report = store.add_items([item_from_review(review(pb.LABEL_NO, 10))])  # replayed
    assert report.unchanged == ["case-1/c0"]
    assert label(store) == "YES"


def test_a_newer_review_with_the_same_label_still_outranks_an_older_one(tmp_path: Path) -> None:
    store = CalibrationStore.open(f"sqlite:///{tmp_path / 'reag.db'}")
    store.add_items([item_from_review(review(pb.LABEL_YES, 1, "ana"))])
    store.add_items([item_from_review(review(pb.LABEL_YES, 30, "bob"))])
    store.add_items([item_from_review(review(pb.LABEL_NO, 5, "cy"))])  # older than bob's
    assert label(store) == "YES"
    store.add_items([item_from_review(review(pb.LABEL_NO, 31, "cy"))])  # newer: it wins
    assert label(store) == "NO"
