"""The judge cascade over a real Kafka-protocol broker (Tansu, on a socket).

Judges run in-process with scripted providers whose label probabilities the
test controls (see conftest): confidence 0.99 for SURE-*, 0.8 for
FAIRLY-SURE, 0.6 for UNSURE responses.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reag.calibration.store import CalibrationStore
from reag.calibration_run.fitting import FitSpec
from reag.llm.client import LLMClient
from reag.v1 import events_pb2 as pb
from services.calibrator.handlers import build_router as build_calibrator
from services.calibrator.main import build_recalibrator, republish_latest
from services.calibrator.settings import CalibratorSettings
from services.kit.admin import ensure_topics
from services.kit.broker import make_broker
from services.kit.settings import KafkaSettings
from services.kit.testing import produce_events as produce
from services.kit.testing import read_events as read_until
from services.kit.topology import ABSTAINS, JUDGE_TIER, REVIEWS, THRESHOLDS, VERDICTS
from shell.kafka_io.labels import calibrate_from_labels

from .conftest import (
    Cascade,
    StartCascade,
    judge_request,
    threshold,
    tier_provider,
    until,
)

pytestmark = [pytest.mark.kafka]


def by_case(event: object) -> str:
    return str(event.meta.case_id)  # type: ignore[attr-defined]


async def send(cascade: Cascade, *requests: pb.JudgeRequest) -> None:
    await produce(cascade.bootstrap, JUDGE_TIER[1] + cascade.suffix, requests, by_case)


async def test_a_confident_criterion_stops_at_tier_1(cascade_factory: StartCascade) -> None:
    cascade = await cascade_factory([threshold(1, 0.95), threshold(2, 0.95), threshold(3, 0.95)])
    await send(cascade, judge_request("sure-1", "SURE-NO"))
    verdicts = await read_until(
        cascade.bootstrap, VERDICTS + cascade.suffix, pb.Verdict, lambda vs: len(vs) >= 1
    )
    assert len(verdicts) == 1
    verdict = verdicts[0]
    assert verdict.criterion_id == "sure-1/c0"
    assert (verdict.tier, verdict.label) == (1, pb.LABEL_NO)
    assert verdict.confidence == pytest.approx(0.99)
    assert [a.tier for a in verdict.history] == [1]
    assert len(verdict.history[0].annotator_yes) >= 1
    assert len(cascade.providers[2].calls) == 0  # tier 2 never ran
    assert len(cascade.providers[3].calls) == 0


async def test_an_unconfident_criterion_passes_every_tier_and_is_abstained(
    cascade_factory: StartCascade,
) -> None:
    cascade = await cascade_factory([threshold(1, 0.95), threshold(2, None), threshold(3, 0.9)])
    await send(cascade, judge_request("unsure-1", "UNSURE"))
    abstains = await read_until(
        cascade.bootstrap, ABSTAINS + cascade.suffix, pb.Abstain, lambda xs: len(xs) >= 1
    )
    assert len(abstains) == 1
    abstain = abstains[0]
    history = abstain.request.history
    assert [a.tier for a in history] == [1, 2, 3]
    assert [a.model for a in history] == ["fake:tier1", "fake:tier2", "fake:tier3"]
    assert [a.has_threshold for a in history] == [True, False, True]
    assert all(a.confidence == pytest.approx(0.6) and not a.accepted for a in history)
    assert abstain.request.criterion.text == "Flags sugar."
    assert "30 g sugar" in abstain.request.actual_response
    assert abstain.request.persona.category_id == "t2d"
    assert abstain.request.evidence[0].doc_id == "requirement/R-1"
    assert "no calibrated threshold" in abstain.reason
    assert abstain.cumulative_cost_usd == pytest.approx(sum(a.cost_usd for a in history))
    verdicts = await read_until(
        cascade.bootstrap, VERDICTS + cascade.suffix, pb.Verdict, lambda vs: False, timeout_s=2
    )
    assert verdicts == []


async def test_a_threshold_update_changes_a_running_judge_without_restart(
    cascade_factory: StartCascade,
) -> None:
    cascade = await cascade_factory([threshold(1, 0.95, seconds=1_000)])
    await send(cascade, judge_request("before", "FAIRLY-SURE"))
    escalated = await read_until(
        cascade.bootstrap, JUDGE_TIER[2] + cascade.suffix, pb.JudgeRequest, lambda xs: len(xs) >= 1
    )
    assert [r.criterion.criterion_id for r in escalated] == ["before/c0"]

    await produce(
        cascade.bootstrap,
        THRESHOLDS + cascade.suffix,
        [await cascade.stamped(threshold(1, 0.75, seconds=2_000))],
        lambda _: "nutrition/tier1",
    )
    book = cascade.deps[1].book
    assert await until(
        lambda: (t := book.get("nutrition")) is not None and t.threshold == pytest.approx(0.75)
    )
    await send(cascade, judge_request("after", "FAIRLY-SURE"))
    verdicts = await read_until(
        cascade.bootstrap, VERDICTS + cascade.suffix, pb.Verdict, lambda vs: len(vs) >= 1
    )
    assert [(v.criterion_id, v.tier) for v in verdicts] == [("after/c0", 1)]
    assert verdicts[0].threshold == pytest.approx(0.75)


def review(i: int) -> pb.Review:
    """Review i: SURE items labelled as the judges would say, UNSURE ones half wrong."""
    marker = ("SURE-YES", "UNSURE", "SURE-NO", "UNSURE")[i % 4]
    label = pb.LABEL_YES if i % 4 in (0, 1) else pb.LABEL_NO
    item = judge_request(f"rev-{i:02d}", marker)
    item.audit = True  # only exchangeable labels (audits) enter the risk estimate
    event = pb.Review(
        criterion_id=item.criterion.criterion_id, label=label, reviewer="qa", item=item
    )
    event.meta.CopyFrom(item.meta)
    return event


async def test_review_labels_reach_the_calibrator_and_new_thresholds_reach_the_judges(
    cascade_factory: StartCascade,
) -> None:
    m = 20
    cascade = await cascade_factory([])
    settings = CalibratorSettings(
        kafka=cascade.kafka,
        topic_suffix=cascade.suffix,
        recalibrate_every=m,
        alpha=0.25,
        delta=0.1,
        min_accepted=m // 2,
    )
    clients = [LLMClient(tier_provider(t)) for t in (1, 2, 3)]
    broker = make_broker(cascade.kafka, f"calibrator{cascade.suffix}")
    broker.include_router(
        build_calibrator(settings, build_recalibrator(settings, cascade.store, clients))
    )
    async with broker:
        await broker.start()
        assert cascade.deps[1].book.get("nutrition") is None
        await produce(
            cascade.bootstrap, REVIEWS + cascade.suffix, [review(i) for i in range(m)], by_case
        )
        published = await read_until(
            cascade.bootstrap, THRESHOLDS + cascade.suffix, pb.Threshold, lambda ts: len(ts) >= 3
        )
        book = cascade.deps[1].book
        assert await until(lambda: book.get("nutrition") is not None)

    assert [(t.tier, t.has_threshold) for t in published] == [(1, True), (2, False), (3, False)]
    tier1 = published[0]
    assert tier1.n_calibration == m
    assert tier1.n_accepted == m // 2
    assert tier1.model == "fake:tier1"
    assert tier1.calibration_hash
    # One calibration, after the M-th label, not before.
    assert len(cascade.store.threshold_history("nutrition")) == 3
    assert cascade.store.count_items("nutrition") == m

    held = cascade.deps[1].book.get("nutrition")
    assert held is not None
    assert held.threshold == pytest.approx(tier1.threshold)
    await send(cascade, judge_request("live-1", "SURE-YES"))
    verdicts = await read_until(
        cascade.bootstrap, VERDICTS + cascade.suffix, pb.Verdict, lambda vs: len(vs) >= 1
    )
    assert [(v.criterion_id, v.tier, v.label) for v in verdicts] == [("live-1/c0", 1, pb.LABEL_YES)]


async def test_the_calibrator_republishes_stored_thresholds_at_start(
    cascade_factory: StartCascade,
) -> None:
    cascade = await cascade_factory([])
    old, new = threshold(1, 0.9, seconds=10), threshold(1, 0.8, seconds=20)
    fitted = threshold(2, None, seconds=10)
    stale = threshold(3, 0.7, seconds=10)  # fitted under an older prompt: not in force
    for t in (old, new, fitted, stale):
        await cascade.stamped(t)
    stale.prompt_version = "judge-prompt-v3"
    cascade.store.record_thresholds([old, fitted, stale], prompt_version="v", trigger="cli")
    cascade.store.record_thresholds([new], prompt_version="v", trigger="reviews")
    settings = CalibratorSettings(kafka=cascade.kafka, topic_suffix=cascade.suffix)
    clients = [LLMClient(tier_provider(t)) for t in (1, 2, 3)]
    assert (
        await republish_latest(settings, build_recalibrator(settings, cascade.store, clients)) == 2
    )
    published = await read_until(
        cascade.bootstrap, THRESHOLDS + cascade.suffix, pb.Threshold, lambda ts: len(ts) >= 2
    )
    assert sorted((t.tier, t.threshold) for t in published) == [(1, pytest.approx(0.8)), (2, 0.0)]
    book = cascade.deps[1].book
    assert await until(
        lambda: (t := book.get("nutrition")) is not None and t.threshold == pytest.approx(0.8)
    )


async def test_calibrate_from_labels_publishes_for_the_judges(
    kafka: KafkaSettings,
    topic_suffix: str,
    calibration_store: CalibrationStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await ensure_topics(kafka, topic_suffix)
    monkeypatch.setenv("REAG_KAFKA__BOOTSTRAP_SERVERS", kafka.bootstrap_servers)
    monkeypatch.setenv("REAG_TOPIC_SUFFIX", topic_suffix)
    path = tmp_path / "labels.jsonl"
    path.write_text(
        "\n".join(
            json.dumps(
                {
                    "item_id": f"l{i}",
                    "app": "nutrition",
                    "persona_category": "t2d",
                    "query": "q",
                    "criterion": "c",
                    "actual_response": "SURE-YES" if i % 2 else "SURE-NO",
                    "label": "YES" if i % 2 else "NO",
                }
            )
            for i in range(30)
        )
        + "\n"
    )
    clients = [LLMClient(tier_provider(t)) for t in (1, 2, 3)]
    run = await calibrate_from_labels(
        path, FitSpec(alpha=0.2, delta=0.1), publish=True, store=calibration_store, clients=clients
    )
    assert run.published == 3
    published = await read_until(
        kafka.bootstrap_servers, THRESHOLDS + topic_suffix, pb.Threshold, lambda ts: len(ts) >= 3
    )
    assert [(t.tier, t.has_threshold) for t in published] == [(1, True), (2, False), (3, False)]
    assert published[0].n_calibration == 30
    assert published[0].calibration_hash == run.result.calibration.calibration_hash
