"""judge-tier and calibrator wiring under FastStream's in-memory TestKafkaBroker."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from faststream.kafka import KafkaBroker, TestKafkaBroker
from prometheus_client import REGISTRY

from reag.calibration.store import CalibrationStore
from reag.judging.identity import JudgeIdentity
from reag.judging.tier import JudgeTier
from reag.llm.client import LLMClient
from reag.llm.scripted import FakeProvider
from reag.v1 import events_pb2 as pb
from services.calibrator.handlers import build_router as build_calibrator
from services.calibrator.main import build_recalibrator
from services.calibrator.settings import CalibratorSettings
from services.judge.handlers import build_router
from services.judge.main import build_tier
from services.judge.settings import JudgeSettings
from services.kit.topology import ABSTAINS, DLQ, JUDGE_TIER, REVIEWS, THRESHOLDS, VERDICTS

from .conftest import make_request
from .labelled_data import marker_script

SUFFIX = "-unit"


def sample(name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


def judge_deps(settings: JudgeSettings, store: CalibrationStore | None = None) -> JudgeTier:
    provider = FakeProvider(model="fake:tier3", label_script=marker_script())
    return build_tier(settings, LLMClient(provider), store)


def test_settings_pick_the_tier_model_from_the_shared_list() -> None:
    shared = "gemini:gemini-2.5-flash-lite,openai:gpt-4.1-mini,gemini:gemini-2.5-flash"
    assert JudgeSettings(tier=2, tier_models=shared).model() == "openai:gpt-4.1-mini"
    assert JudgeSettings(tier=2, tier_models=shared, judge_model="openai:o4-mini").model() == (
        "openai:o4-mini"
    )
    assert JudgeSettings(tier=3).model() is None  # the LLM layer's default
    with pytest.raises(ValueError, match="3 tiers"):
        JudgeSettings(tier_models="a:b,c:d,e:f,g:h").model()


def test_each_tier_has_its_own_annotator_count() -> None:
    settings = JudgeSettings(tier=2, annotators=5, tier_annotators="1,,3")
    assert [settings.annotators_for(t) for t in (1, 2, 3)] == [1, 5, 3]
    assert settings.judge_config(3).n_annotators == 3
    assert JudgeSettings(annotators=4, tier_annotators="").annotators_for(3) == 4
    for bad in ("1,1,1,1", "0", "two", "-1"):
        with pytest.raises(ValueError, match=r"counts|annotator count"):
            JudgeSettings(tier_annotators=bad)


def test_the_cascade_has_one_tier_per_named_model() -> None:
    assert JudgeSettings(tier_models="a:x,b:y").n_tiers == 2
    assert JudgeSettings(tier_models="").n_tiers == 3  # every tier on the LLM layer's default
    with pytest.raises(ValueError, match="not in the cascade"):
        JudgeSettings(tier=3, tier_models="a:x,b:y")


async def test_a_two_tier_cascade_sends_its_second_tiers_doubts_to_review() -> None:
    settings = JudgeSettings(tier=2, tier_models="fake:tier1,fake:tier3", topic_suffix=SUFFIX)
    deps = judge_deps(settings)
    broker = KafkaBroker()
    broker.include_router(build_router(settings, deps))
    abstains: list[pb.Abstain] = []
    onward: list[bytes] = []

    @broker.subscriber(ABSTAINS + SUFFIX)
    async def on_abstain(body: bytes) -> None:
        abstains.append(pb.Abstain.FromString(body))

    @broker.subscriber(JUDGE_TIER[3] + SUFFIX)
    async def on_tier3(body: bytes) -> None:
        onward.append(body)

    async with TestKafkaBroker(broker) as test_broker:
        request = make_request("Sugar is 30 g. UNSURE", app="two-tier", case="c-2")
        await test_broker.publish(request.SerializeToString(), JUDGE_TIER[2] + SUFFIX)
    assert onward == []
    assert [a.tier for a in abstains[0].request.history] == [2]


async def test_tier_one_audits_a_criterion_and_sends_it_on_even_when_it_accepts() -> None:
    settings = JudgeSettings(
        tier=1, tier_models="fake:tier3,fake:tier3", topic_suffix=SUFFIX, audit_rate=1.0
    )
    deps = judge_deps(settings)
    broker = KafkaBroker()
    broker.include_router(build_router(settings, deps))
    verdicts: list[pb.Verdict] = []
    onward: list[pb.JudgeRequest] = []

    @broker.subscriber(VERDICTS + SUFFIX)
    async def on_verdict(body: bytes) -> None:
        verdicts.append(pb.Verdict.FromString(body))

    @broker.subscriber(JUDGE_TIER[2] + SUFFIX)
    async def on_tier2(body: bytes) -> None:
        onward.append(pb.JudgeRequest.FromString(body))

    app = "audit-app"
    async with TestKafkaBroker(broker) as test_broker:
        th = pb.Threshold(app=app, tier=1, model="fake:tier3", has_threshold=True, threshold=0.9)
        JudgeIdentity.of_judge(await deps.judge_for(app)).stamp(th)
        th.computed_at.seconds = 5
        await test_broker.publish(th.SerializeToString(), THRESHOLDS + SUFFIX)
        request = make_request("Sugar is 30 g. SURE-NO", app=app, case="c-audit")
        await test_broker.publish(request.SerializeToString(), JUDGE_TIER[1] + SUFFIX)
    assert [(v.tier, v.audit) for v in verdicts] == [(1, True)]
    assert [(r.audit, [a.accepted for a in r.history]) for r in onward] == [(True, [True])]


def test_a_tier_without_threshold_says_so_at_start(caplog: pytest.LogCaptureFixture) -> None:
    settings = JudgeSettings(tier=3, topic_suffix=SUFFIX)
    deps = judge_deps(settings)
    with caplog.at_level(logging.WARNING, logger="reag.judge"):
        deps.announce(["start-app"], source=THRESHOLDS + SUFFIX)
    assert "accepts nothing" in caplog.text
    assert sample("reag_judge_threshold_present", tier="3", app="start-app") == 0.0


async def test_last_tier_abstains_then_accepts_once_a_threshold_arrives() -> None:
    settings = JudgeSettings(tier=3, topic_suffix=SUFFIX)
    deps = judge_deps(settings)
    broker = KafkaBroker()
    broker.include_router(build_router(settings, deps))
    abstains: list[pb.Abstain] = []
    verdicts: list[pb.Verdict] = []

    @broker.subscriber(ABSTAINS + SUFFIX)
    async def on_abstain(body: bytes) -> None:
        abstains.append(pb.Abstain.FromString(body))

    @broker.subscriber(VERDICTS + SUFFIX)
    async def on_verdict(body: bytes) -> None:
        verdicts.append(pb.Verdict.FromString(body))

    app = "svc-app"
    async with TestKafkaBroker(broker) as test_broker:
        request = make_request("Sugar is 30 g. SURE-NO", app=app, case="c-1")
        await test_broker.publish(request.SerializeToString(), JUDGE_TIER[3] + SUFFIX)
        assert len(abstains) == 1
        assert verdicts == []
        assert [a.tier for a in abstains[0].request.history] == [3]
        assert sample("reag_judge_threshold_present", tier="3", app=app) == 0.0

        th = pb.Threshold(app=app, tier=3, model="fake:tier3", has_threshold=True, threshold=0.9)
        JudgeIdentity.of_judge(await deps.judge_for(app)).stamp(th)
        th.computed_at.seconds = 5
        await test_broker.publish(th.SerializeToString(), THRESHOLDS + SUFFIX)
        assert sample("reag_judge_threshold", tier="3", app=app) == pytest.approx(0.9)
        await test_broker.publish(request.SerializeToString(), JUDGE_TIER[3] + SUFFIX)
        assert [(v.tier, v.label) for v in verdicts] == [(3, pb.LABEL_NO)]
    assert sample("reag_judge_decisions_total", tier="3", app=app, decision="abstained") == 1.0
    assert sample("reag_judge_decisions_total", tier="3", app=app, decision="accepted") == 1.0


@pytest.mark.parametrize(
    ("field", "other"),
    [
        ("prompt_version", "judge-prompt-v3"),
        ("n_annotators", 3),
        ("k_examples", 1),
        ("model", "fake:other"),
        ("weights_sha256", "ab" * 32),
        ("examples_digest", "0" * 64),
    ],
)
async def test_a_running_judge_refuses_a_threshold_fitted_on_another_judge(
    field: str, other: object, caplog: pytest.LogCaptureFixture
) -> None:
    """Accepts nothing under it (logged, gauge), then accepts under the matching one."""
    settings = JudgeSettings(tier=3, topic_suffix=SUFFIX)
    deps = judge_deps(settings)
    broker = KafkaBroker()
    broker.include_router(build_router(settings, deps))
    verdicts: list[pb.Verdict] = []
    abstains: list[pb.Abstain] = []

    @broker.subscriber(VERDICTS + SUFFIX)
    async def on_verdict(body: bytes) -> None:
        verdicts.append(pb.Verdict.FromString(body))

    @broker.subscriber(ABSTAINS + SUFFIX)
    async def on_abstain(body: bytes) -> None:
        abstains.append(pb.Abstain.FromString(body))

    app = f"identity-{field}"
    own = JudgeIdentity.of_judge(await deps.judge_for(app))
    stale = pb.Threshold(app=app, has_threshold=True, threshold=0.5)
    own.stamp(stale)
    setattr(stale, field, other)
    stale.computed_at.seconds = 5
    matching = pb.Threshold(app=app, has_threshold=True, threshold=0.5)
    own.stamp(matching)
    matching.computed_at.seconds = 6
    request = make_request("Sugar is 30 g. SURE-NO", app=app, case="c-1")
    async with TestKafkaBroker(broker) as test_broker:
        if field != "model":  # the book already drops another model's threshold on arrival
            await test_broker.publish(stale.SerializeToString(), THRESHOLDS + SUFFIX)
            assert deps.book.get(app) is not None
        with caplog.at_level(logging.WARNING, logger="reag.judge"):
            await test_broker.publish(request.SerializeToString(), JUDGE_TIER[3] + SUFFIX)
        assert verdicts == []
        assert len(abstains) == 1
        if field != "model":
            assert f"refuses the threshold for {app}" in caplog.text
            assert field in caplog.text
            assert sample("reag_judge_threshold_refused", tier="3", app=app) == 1.0
        await test_broker.publish(matching.SerializeToString(), THRESHOLDS + SUFFIX)
        await test_broker.publish(request.SerializeToString(), JUDGE_TIER[3] + SUFFIX)
        assert [(v.tier, v.label) for v in verdicts] == [(3, pb.LABEL_NO)]
    assert sample("reag_judge_threshold_refused", tier="3", app=app) == 0.0


async def test_calibrator_dead_letters_itemless_reviews_and_recalibrates_after_m(
    tmp_path: Path,
) -> None:
    store = CalibrationStore.open(f"sqlite:///{tmp_path / 'c.db'}")
    settings = CalibratorSettings(
        topic_suffix=SUFFIX,
        recalibrate_every=4,
        alpha=0.5,
        delta=0.2,
        annotators=2,
        examples=1,
        min_accepted=3,
    )
    clients = [
        LLMClient(FakeProvider(model=f"fake:t{t}", label_script=marker_script())) for t in (1, 2, 3)
    ]
    broker = KafkaBroker()
    broker.include_router(build_calibrator(settings, build_recalibrator(settings, store, clients)))
    thresholds: list[pb.Threshold] = []
    letters: list[pb.DeadLetter] = []

    @broker.subscriber(THRESHOLDS + SUFFIX)
    async def on_threshold(body: bytes) -> None:
        thresholds.append(pb.Threshold.FromString(body))

    @broker.subscriber(DLQ)
    async def on_letter(body: bytes) -> None:
        letters.append(pb.DeadLetter.FromString(body))

    def review(i: int, *, with_item: bool = True, audit: bool = True) -> bytes:
        marker = "SURE-YES" if i % 2 == 0 else "SURE-NO"
        item = make_request(f"answer {i}: {marker}", app="cal-app", case=f"r{i}")
        item.audit = audit
        event = pb.Review(
            criterion_id=f"r{i}/c0", label=pb.LABEL_YES if i % 2 == 0 else pb.LABEL_NO
        )
        event.meta.CopyFrom(item.meta)
        if with_item:
            event.item.CopyFrom(item)
        return event.SerializeToString()

    async with TestKafkaBroker(broker) as test_broker:
        await test_broker.publish(review(0, with_item=False), REVIEWS + SUFFIX)
        assert [x.error_type for x in letters] == ["missing_field"]
        for i in range(3):
            await test_broker.publish(review(i), REVIEWS + SUFFIX)
        await test_broker.publish(review(2), REVIEWS + SUFFIX)  # the same criterion again
        for i in range(10, 16):  # reviewed abstentions: kept, never in the risk estimate
            await test_broker.publish(review(i, audit=False), REVIEWS + SUFFIX)
        assert thresholds == []
        await test_broker.publish(review(3), REVIEWS + SUFFIX)
        assert [t.tier for t in thresholds] == [1, 2, 3]
    assert thresholds[0].n_calibration == 4  # the audits only
    assert all(t.min_accepted == 3 for t in thresholds)  # the settings' rule
    assert store.count_items("cal-app") == 10
    assert store.count_items("cal-app", sources=("review",)) == 6
    assert sample("reag_calibration_items", app="cal-app") == 10.0
    # the four audits were counted (no thresholds then: every tier would abstain) and the
    # new thresholds start an epoch with no audits yet
    assert sample("reag_audits_total", app="cal-app", tier="none") == 4.0
    assert sample("reag_trust_insufficient", app="cal-app", tier="all") == 1.0


def test_the_embedded_default_is_the_one_judge_the_sweep_chose(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Qwen2.5-Coder 1.5B with one annotator, alone: the other local judges add only cost
    (bench.verdicts on the example's labelled set; docs/cascade.md)."""
    monkeypatch.delenv("REAG_TIER_MODELS")
    monkeypatch.delenv("REAG_TIER_ANNOTATORS")
    settings = JudgeSettings()
    assert settings.n_tiers == 1
    assert settings.model() == "local:qwen2.5-coder-1.5b-instruct"
    assert settings.judge_config(1).n_annotators == 1
    with pytest.raises(ValueError, match="not in the cascade"):
        JudgeSettings(tier=2)


def test_the_calibrator_fits_with_the_one_set_of_defaults() -> None:
    from reag.calibration import Grid
    from reag.calibration_run.fitting import FitSpec

    assert CalibratorSettings().fit_spec() == FitSpec()
    custom = CalibratorSettings(alpha=0.2, grid="0.9:0.5:0.1", mode="system").fit_spec()
    assert (custom.alpha, custom.mode, custom.grid) == (0.2, "system", Grid.parse("0.9:0.5:0.1"))
