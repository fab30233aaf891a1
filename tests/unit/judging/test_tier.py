"""``JudgeTier`` with no broker: what one tier decides, which thresholds it holds and refuses.

The judge service only decodes and emits around these calls
(tests/unit/judging/test_services.py drives it under FastStream's test broker).
"""

from __future__ import annotations

import logging

import pytest

from reag.judging.identity import JudgeIdentity
from reag.judging.settings import CascadeSettings
from reag.judging.tier import JudgeTier
from reag.llm.client import LLMClient
from reag.llm.scripted import FakeProvider
from reag.v1 import events_pb2 as pb

from .conftest import make_request
from .labelled_data import marker_script

MODEL = "fake:tier3"
SETTINGS = CascadeSettings(tier_models=f"{MODEL},{MODEL},{MODEL}", tier_annotators="")


def make_tier(tier: int = 1, *, audit: bool = False) -> JudgeTier:
    client = LLMClient(FakeProvider(model=MODEL, label_script=marker_script()))
    return JudgeTier(SETTINGS, tier, client, None, audit=lambda _criterion: audit)


async def stamped(tier: JudgeTier, app: str, value: float, seconds: int = 5) -> pb.Threshold:
    """A threshold as the calibrator publishes it: fitted on the tier's own judge."""
    threshold = pb.Threshold(
        app=app, tier=tier.tier, model=MODEL, has_threshold=True, threshold=value
    )
    JudgeIdentity.of_judge(await tier.judge_for(app)).stamp(threshold)
    threshold.computed_at.seconds = seconds
    return threshold


async def test_without_a_threshold_a_confident_judge_still_escalates() -> None:
    tier = make_tier(1)
    step = await tier.decide(make_request("Sugar is 30 g. SURE-YES", app="none"))
    assert step.decision == "escalated"
    assert step.verdict is None
    assert step.escalation is not None
    assert [a.tier for a in step.escalation.history] == [1]


async def test_a_held_threshold_accepts_what_the_judge_is_sure_of_and_escalates_the_rest() -> None:
    tier = make_tier(1)
    assert tier.follow(await stamped(tier, "app", 0.9))
    sure = await tier.decide(make_request("Sugar is 30 g. SURE-NO", app="app", case="c1"))
    assert sure.decision == "accepted"
    assert sure.verdict is not None
    assert sure.verdict.tier == 1
    unsure = await tier.decide(make_request("Sugar is 30 g. UNSURE", app="app", case="c2"))
    assert unsure.decision == "escalated"


async def test_the_last_tier_sends_its_doubts_to_review() -> None:
    tier = make_tier(3)
    assert tier.last
    step = await tier.decide(make_request("Sugar is 30 g. UNSURE", app="app"))
    assert step.abstain is not None
    assert step.escalation is None


async def test_a_threshold_fitted_on_another_judge_is_refused_on_use(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tier = make_tier(1)
    threshold = await stamped(tier, "app", 0.9)
    threshold.prompt_version = "another-prompt"
    assert tier.follow(threshold)  # held: the book checks tier and model only
    judge = await tier.judge_for("app")
    with caplog.at_level(logging.WARNING, logger="reag.judge"):
        assert tier.usable_threshold("app", judge) is None
        step = await tier.decide(make_request("Sugar is 30 g. SURE-NO", app="app"))
    assert step.decision == "escalated"
    assert caplog.text.count("refuses the threshold for app") == 1  # said once, not per use


async def test_follow_ignores_other_tiers_and_older_thresholds_and_reloads_the_judge() -> None:
    tier = make_tier(2)
    other = pb.Threshold(app="app", tier=1, model=MODEL, has_threshold=True, threshold=0.5)
    assert not tier.follow(other)
    assert tier.book.get("app") is None
    before = await tier.judge_for("app")
    assert tier.follow(await stamped(tier, "app", 0.9, seconds=10))
    assert await tier.judge_for("app") is not before  # new thresholds, new pinned examples
    assert not tier.follow(await stamped(tier, "app", 0.7, seconds=5))  # older
    held = tier.book.get("app")
    assert held is not None
    assert held.threshold == pytest.approx(0.9)


async def test_only_tier_one_picks_audits_and_only_for_fresh_criteria() -> None:
    first = await make_tier(1, audit=True).decide(make_request("x SURE-NO", app="a"))
    assert first.escalation is not None
    assert first.escalation.audit
    later = make_request("x SURE-NO", app="a")
    later.history.add(tier=1)
    again = await make_tier(1, audit=True).decide(later)
    assert again.escalation is not None
    assert not again.escalation.audit  # picked once, before any tier decided
    second = await make_tier(2, audit=True).decide(make_request("x SURE-NO", app="a"))
    assert second.escalation is not None
    assert not second.escalation.audit


async def test_load_follows_what_was_read_and_names_the_apps_without_a_threshold(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tier = make_tier(1)
    with caplog.at_level(logging.WARNING, logger="reag.judge"):
        await tier.load([], source="reag.thresholds.v1")
    assert "no threshold on reag.thresholds.v1 for any app" in caplog.text
    caplog.clear()
    held = await stamped(tier, "held", 0.9)
    with caplog.at_level(logging.WARNING, logger="reag.judge"):
        await tier.load([held], source="reag.thresholds.v1")
        tier.announce(["unheld"], source="reag.thresholds.v1")
    assert tier.book.get("held") is not None
    assert "no threshold for unheld" in caplog.text


async def test_an_app_on_a_provisional_threshold_is_audited_at_the_provisional_rate() -> None:
    client = LLMClient(FakeProvider(model=MODEL, label_script=marker_script()))
    tier = JudgeTier(
        SETTINGS, 1, client, None, audit=lambda _c: False, audit_provisional=lambda _c: True
    )
    firm = await stamped(tier, "firm", 0.9)
    borrowed = await stamped(tier, "new", 0.9)
    borrowed.provisional = True
    borrowed.pooled_apps.append("firm")
    assert tier.follow(firm)
    assert tier.follow(borrowed)
    on_firm = await tier.decide(make_request("x SURE-NO", app="firm", case="f1"))
    on_new = await tier.decide(make_request("x SURE-NO", app="new", case="n1"))
    assert on_firm.verdict is not None
    assert not on_firm.verdict.audit
    assert on_new.verdict is not None
    assert on_new.verdict.audit
    assert on_new.verdict.provisional
