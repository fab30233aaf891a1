"""``Recalibrator`` with no broker: which reviews count, when the app is refitted, and which
stored thresholds may be republished.

The calibrator service only decodes reviews around ``on_review``
(tests/unit/judging/test_services.py drives it under FastStream's test broker).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from reag.calibration.store import CalibrationStore
from reag.calibration_run.fitting import FitSpec
from reag.judging.settings import CascadeSettings
from reag.llm.client import LLMClient
from reag.llm.scripted import FakeProvider
from reag.recalibration import Recalibrator
from reag.v1 import events_pb2 as pb
from tests.unit.judging.conftest import make_request
from tests.unit.judging.labelled_data import marker_script

APP = "recal-app"
CASCADE = CascadeSettings(tier_models="", tier_annotators="", annotators=2, examples=1)
SPEC = FitSpec(alpha=0.5, delta=0.2, min_accepted=3)


def clients(prefix: str = "fake:t") -> list[LLMClient]:
    return [
        LLMClient(FakeProvider(model=f"{prefix}{t}", label_script=marker_script()))
        for t in (1, 2, 3)
    ]


@pytest.fixture
def store(tmp_path: Path) -> CalibrationStore:
    return CalibrationStore.open(f"sqlite:///{tmp_path / 'c.db'}")


def review(i: int, *, audit: bool = True) -> pb.Review:
    """An expert's label on criterion ``r<i>``; ``audit`` False: a reviewed abstention."""
    marker = "SURE-YES" if i % 2 == 0 else "SURE-NO"
    item = make_request(f"answer {i}: {marker}", app=APP, case=f"r{i}")
    item.audit = audit
    event = pb.Review(criterion_id=f"r{i}/c0", label=pb.LABEL_YES if i % 2 == 0 else pb.LABEL_NO)
    event.meta.CopyFrom(item.meta)
    event.item.CopyFrom(item)
    return event


async def test_every_m_exchangeable_labels_refit_the_app(store: CalibrationStore) -> None:
    recalibrator = Recalibrator(store, clients(), CASCADE, SPEC, every=4)
    for i in range(3):
        assert await recalibrator.on_review(review(i)) == []
    assert await recalibrator.on_review(review(2)) == []  # the same criterion: nothing new
    for i in range(10, 14):  # reviewed abstentions: kept as examples, never counted
        assert await recalibrator.on_review(review(i, audit=False)) == []
    assert recalibrator.new_labels(APP) == 3
    thresholds = await recalibrator.on_review(review(3))
    assert [t.tier for t in thresholds] == [1, 2, 3]
    assert thresholds[0].n_calibration == 4  # the audits only
    assert {t.alpha for t in thresholds} == {0.5}  # the spec's fit
    assert all(t.min_accepted == 3 for t in thresholds)
    assert recalibrator.new_labels(APP) == 0  # counted again from this fit
    assert [t.tier for t in store.latest_thresholds(APP)] == [1, 2, 3]


async def test_stored_thresholds_are_republished_only_for_the_judges_that_run_now(
    store: CalibrationStore,
) -> None:
    recalibrator = Recalibrator(store, clients(), CASCADE, SPEC, every=1)
    fitted = await recalibrator.on_review(review(0))
    assert len(fitted) == 3
    assert [t.tier for t in recalibrator.current_thresholds()] == [1, 2, 3]
    other_models = Recalibrator(store, clients("fake:other"), CASCADE, SPEC, every=1)
    assert other_models.current_thresholds() == []
    fewer_tiers = Recalibrator(store, clients()[:1], CASCADE, SPEC, every=1)
    assert [t.tier for t in fewer_tiers.current_thresholds()] == [1]


async def test_reviews_in_flight_together_refit_the_app_once(store: CalibrationStore) -> None:
    """Events in flight (REAG_DELIVERY__MAX_IN_FLIGHT): eight reviews at once, M = 4.
    Each sees at least M new labels once its own is stored; the refits are one at a time,
    and each counts again under the lock, so eight labels make at most two refits."""
    recalibrator = Recalibrator(store, clients(), CASCADE, SPEC, every=4)
    runs: list[str] = []
    refit = recalibrator.recalibrate

    async def counted(app: str, *, trigger: str = "reviews") -> object:
        runs.append(app)
        return await refit(app, trigger=trigger)

    object.__setattr__(recalibrator, "recalibrate", counted)
    outcomes = await asyncio.gather(*(recalibrator.on_review(review(i)) for i in range(8)))
    assert 1 <= len(runs) <= 2
    assert sum(1 for thresholds in outcomes if thresholds) == len(runs)
    assert recalibrator.new_labels(APP) < 4
