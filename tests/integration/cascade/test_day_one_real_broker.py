"""Day one over a real Kafka-protocol broker: a new app borrows a calibrated app's thresholds,
its verdicts come out provisional (verdicts, ledger results, report, metrics), audits that agree
certify the thresholds so later verdicts are firm, and audits that disagree withdraw them.

Judges and the calibrator run in-process with the scripted providers of conftest; the ledger's
store rebuilds results from the verdicts read back off the broker.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from reag.ledger.store import LedgerStore
from reag.llm.client import LLMClient
from reag.recalibration import Recalibrator
from reag.report.html import ReportInputs, render_run_report
from reag.v1 import events_pb2 as pb
from services.calibrator.handlers import build_router as build_calibrator
from services.calibrator.main import build_recalibrator
from services.calibrator.settings import CalibratorSettings
from services.kit.broker import make_broker
from services.kit.testing import produce_events as produce
from services.kit.testing import read_events as read_until
from services.kit.topology import JUDGE_TIER, REVIEWS, THRESHOLDS, VERDICTS
from shell.kafka_io.labels import borrow_thresholds_for

from .conftest import APP, Cascade, StartCascade, judge_request, tier_provider, until

pytestmark = [pytest.mark.kafka]

NEW, DOUBTFUL = "day-one-app", "doubtful-app"


def request_for(app: str, case: str, marker: str) -> pb.JudgeRequest:
    request = judge_request(case, marker)
    request.meta.app = app
    return request


def audit(app: str, i: int, *, judge_right: bool) -> pb.Review:
    """A labelled audit of ``app`` that every tier judged at 0.99; the expert agrees or not."""
    yes = i % 2 == 0
    item = request_for(app, f"{app}-audit-{i:02d}", "SURE-YES" if yes else "SURE-NO")
    item.audit = True
    said = pb.LABEL_YES if yes else pb.LABEL_NO
    for tier in (1, 2, 3):
        item.history.add(tier=tier, verdict=said, confidence=0.99, has_threshold=tier == 1)
    other = pb.LABEL_NO if yes else pb.LABEL_YES
    event = pb.Review(
        criterion_id=item.criterion.criterion_id,
        label=said if judge_right else other,
        reviewer="qa",
        item=item,
    )
    event.meta.CopyFrom(item.meta)
    return event


def sample(name: str, **labels: str) -> float:
    value = REGISTRY.get_sample_value(name, labels)
    return 0.0 if value is None else value


async def verdicts_of(cascade: Cascade, *requests: pb.JudgeRequest) -> list[pb.Verdict]:
    await produce(
        cascade.bootstrap, JUDGE_TIER[1] + cascade.suffix, requests, lambda r: r.meta.case_id
    )
    wanted = {r.criterion.criterion_id for r in requests}
    read = await read_until(
        cascade.bootstrap,
        VERDICTS + cascade.suffix,
        pb.Verdict,
        lambda vs: wanted <= {v.criterion_id for v in vs},
    )
    return [v for v in read if v.criterion_id in wanted]


def tier_clients() -> list[LLMClient]:
    return [LLMClient(tier_provider(t)) for t in (1, 2, 3)]


async def lender_calibrated(cascade: Cascade, settings: CalibratorSettings) -> None:
    """The example app calibrated on 20 labelled audits the judges get right."""
    recalibrator = Recalibrator(
        cascade.store, tier_clients(), settings, settings.fit_spec(), every=20
    )
    for i in range(20):
        await recalibrator.on_review(audit(APP, i, judge_right=True))
    assert cascade.store.latest_thresholds(APP)[0].has_threshold


async def test_a_new_app_is_provisional_until_its_audits_certify_or_withdraw_it(
    cascade_factory: StartCascade, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cascade = await cascade_factory([])
    settings = CalibratorSettings(
        kafka=cascade.kafka,
        topic_suffix=cascade.suffix,
        recalibrate_every=10_000,
        alpha=0.25,
        delta=0.1,
        min_accepted=10,
    )
    await lender_calibrated(cascade, settings)
    monkeypatch.setenv("REAG_KAFKA__BOOTSTRAP_SERVERS", cascade.bootstrap)
    monkeypatch.setenv("REAG_TOPIC_SUFFIX", cascade.suffix)
    for app in (NEW, DOUBTFUL):
        borrowed, published = await borrow_thresholds_for(
            app, APP, publish=True, store=cascade.store
        )
        assert published == 3
        assert borrowed[0].provisional
    book = cascade.deps[1].book
    assert await until(lambda: all(book.get(a) is not None for a in (NEW, DOUBTFUL)))

    # Day one: the new app's verdicts are provisional, all the way to its results.
    first = await verdicts_of(
        cascade,
        request_for(NEW, "new-pass", "SURE-YES"),
        request_for(NEW, "new-fail", "SURE-NO"),
    )
    assert {(v.criterion_id, v.label, v.provisional) for v in first} == {
        ("new-pass/c0", pb.LABEL_YES, True),
        ("new-fail/c0", pb.LABEL_NO, True),
    }
    ledger = LedgerStore.open(f"sqlite:///{tmp_path / 'ledger.db'}")
    results = {v.meta.case_id: ledger.record(v).result for v in first}
    assert {c: (r.outcome, r.provisional) for c, r in results.items()} == {
        "new-pass": (pb.OUTCOME_PASS, True),
        "new-fail": (pb.OUTCOME_FAIL, True),
    }
    assert 'data-provisional="true"' in render_run_report(
        ReportInputs(results=list(results.values()))
    )
    labels = {"tier": "1", "app": NEW, "provisional": "true"}
    assert sample("reag_judge_verdicts_total", label="YES", **labels) >= 1
    assert sample("reag_judge_threshold_provisional", tier="1", app=NEW) == 1.0

    # The calibrator hears the audits: agreeing ones certify NEW, disagreeing ones withdraw
    # DOUBTFUL, and the judges follow what it publishes.
    broker = make_broker(cascade.kafka, f"calibrator{cascade.suffix}")
    broker.include_router(
        build_calibrator(settings, build_recalibrator(settings, cascade.store, tier_clients()))
    )
    async with broker:
        await broker.start()
        reviews = [audit(NEW, i, judge_right=True) for i in range(30)]
        reviews += [audit(DOUBTFUL, i, judge_right=False) for i in range(30)]
        await produce(
            cascade.bootstrap, REVIEWS + cascade.suffix, reviews, lambda r: r.meta.case_id
        )
        settled = await read_until(
            cascade.bootstrap,
            THRESHOLDS + cascade.suffix,
            pb.Threshold,
            lambda ts: {t.app for t in ts if not t.provisional} >= {NEW, DOUBTFUL},
        )
        assert await until(
            lambda: (t := book.get(NEW)) is not None and not t.provisional and t.certified_by > 0
        )
        assert await until(lambda: (t := book.get(DOUBTFUL)) is not None and t.withdrawn)

    certified = next(t for t in settled if t.app == NEW and t.tier == 1 and not t.provisional)
    assert certified.has_threshold
    assert "certified" in certified.reason
    withdrawn = next(t for t in settled if t.app == DOUBTFUL and t.tier == 1 and t.withdrawn)
    assert not withdrawn.has_threshold

    later = await verdicts_of(cascade, request_for(NEW, "new-later", "SURE-YES"))
    assert [(v.label, v.provisional) for v in later] == [(pb.LABEL_YES, False)]
    assert not ledger.record(later[0]).result.provisional
    assert sample("reag_judge_threshold_provisional", tier="1", app=NEW) == 0.0
    # What ReagProvisionalThresholdWithdrawn reads (its firing is tested in promtool).
    assert sample("reag_judge_threshold_withdrawn", tier="1", app=DOUBTFUL) == 1.0
