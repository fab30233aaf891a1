"""Calibration from a labelled set: each (tier, item) scored once, only what is needed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from reag.calibration.store import CalibrationStore
from reag.calibration_run.calibrate import run_calibration
from reag.calibration_run.files import LabelledFileError, read_labelled
from reag.calibration_run.fitting import FitSpec
from reag.calibration_run.scoring import score_labelled_file
from reag.judging.settings import CascadeSettings
from reag.llm.client import LLMClient
from reag.llm.prices import ModelPrice, PriceTable
from reag.llm.scripted import FakeProvider
from shell.kafka_io.labels import calibrate_from_labels

from .labelled_data import marker_script, write_labelled

PRICE = PriceTable("test", {"fake:*": ModelPrice(input=1.0, cached_input=1.0, output=1.0)})


@pytest.fixture
def store(tmp_path: Path) -> CalibrationStore:
    return CalibrationStore.open(f"sqlite:///{tmp_path / 'reag.db'}")


def tier_clients(*providers: FakeProvider) -> list[LLMClient]:
    return [LLMClient(p, prices=PRICE) for p in providers]


def three_providers() -> list[FakeProvider]:
    return [FakeProvider(model=f"fake:tier{t}", label_script=marker_script()) for t in (1, 2, 3)]


async def test_a_second_run_makes_no_llm_call(store: CalibrationStore, tmp_path: Path) -> None:
    path = write_labelled(tmp_path / "labels.jsonl", 40)
    providers = three_providers()
    clients = tier_clients(*providers)
    first = await run_calibration(
        store, clients, CascadeSettings(), FitSpec(alpha=0.2, delta=0.1), labels=path
    )
    calls = [len(p.calls) for p in providers]
    assert calls[0] == 40 * 5
    assert first.stats.calls == sum(calls)
    second = await run_calibration(
        store, clients, CascadeSettings(), FitSpec(alpha=0.2, delta=0.1), labels=path
    )
    assert [len(p.calls) for p in providers] == calls
    assert second.stats.calls == 0
    assert second.stats.reused == first.stats.scored
    assert [t.threshold for t in second.thresholds] == [t.threshold for t in first.thresholds]
    assert len(store.threshold_history("nutrition")) == 6  # both runs are in the history


def test_a_tier_of_fewer_annotators_sees_the_first_sets_of_a_larger_tier(
    store: CalibrationStore, tmp_path: Path
) -> None:
    """Why a judge of N annotators is the first N annotators of a larger one: the stored
    N = 3 scores then hold every smaller N's, and one model can serve two tiers."""
    from reag.calibration_run.clients import build_judges

    store.add_items(read_labelled(write_labelled(tmp_path / "labels.jsonl", 40)))
    settings = CascadeSettings(tier_annotators="1,2,3", examples=3)
    judges = build_judges(store, "nutrition", tier_clients(*three_providers()), settings)
    sets = [j.annotators.sets for j in judges]
    assert [len(s) for s in sets] == [1, 2, 3]
    assert sets[2][:1] == sets[0]
    assert sets[2][:2] == sets[1]
    assert len({j.prompt_version for j in judges}) == 3  # N and the sets are in the version


async def test_cascade_mode_scores_a_tier_only_on_what_lower_tiers_leave(
    store: CalibrationStore, tmp_path: Path
) -> None:
    path = write_labelled(tmp_path / "labels.jsonl", 40)
    providers = three_providers()
    # 20 SURE items are fewer than the default min_accepted (30): allow them to be tested.
    spec = FitSpec(alpha=0.2, delta=0.1, min_accepted=20)
    result = await run_calibration(
        store, tier_clients(*providers), CascadeSettings(), spec, labels=path
    )
    # Tier 1 is sure (and right) on the 20 SURE items and accepts exactly those.
    fit1 = result.calibration.fit_for(1)
    assert fit1.threshold is not None
    assert fit1.min_accepted == 20
    assert result.thresholds[0].min_accepted == 20
    assert fit1.n_accepted == 20
    assert fit1.n_disagree == 0
    assert [len(p.calls) for p in providers] == [200, 100, 100]
    t1, t2, t3 = result.thresholds
    assert (t1.has_threshold, t2.has_threshold, t3.has_threshold) == (True, False, False)
    assert t1.model == "fake:tier1"
    assert t2.n_calibration == 20
    assert t2.reason
    assert t1.calibration_hash == result.calibration.calibration_hash
    assert t1.mode == "cascade"
    assert store.latest_thresholds("nutrition")[0].threshold == pytest.approx(t1.threshold)


async def test_independent_and_system_modes(store: CalibrationStore, tmp_path: Path) -> None:
    path = write_labelled(tmp_path / "labels.jsonl", 40)
    providers = three_providers()
    ind = await run_calibration(
        store,
        tier_clients(*providers),
        CascadeSettings(),
        FitSpec(alpha=0.2, delta=0.1, mode="independent"),
        labels=path,
    )
    assert [len(p.calls) for p in providers] == [200, 200, 200]
    assert all(t.n_calibration == 40 for t in ind.thresholds)
    system = await run_calibration(
        store,
        tier_clients(*providers),
        CascadeSettings(),
        FitSpec(alpha=0.2, delta=0.1, mode="system"),
        labels=path,
    )
    assert [len(p.calls) for p in providers] == [200, 200, 200]  # all reused
    assert [t.delta for t in system.thresholds] == pytest.approx([0.1 / 3] * 3)
    assert system.thresholds[0].mode == "system"


async def test_tiers_running_one_model_share_its_scores_and_still_pay(
    store: CalibrationStore, tmp_path: Path
) -> None:
    path = write_labelled(tmp_path / "labels.jsonl", 40)
    provider = FakeProvider(model="fake:same", label_script=marker_script())
    client = LLMClient(provider, prices=PRICE)
    records = await score_labelled_file(path, store, [client] * 3, CascadeSettings())
    assert len(records) == 3 * 40
    assert len(provider.calls) == 40 * 5
    by = {(r.item_id, r.tier): r for r in records}
    item = records[0].item_id
    assert by[item, 1].cost_usd
    assert by[item, 3].cost_usd == by[item, 1].cost_usd
    assert by[item, 2].confidence == by[item, 1].confidence
    result = await run_calibration(
        store, [client] * 3, CascadeSettings(), FitSpec(alpha=0.2, delta=0.1), labels=path
    )
    assert len(provider.calls) == 200
    assert "same judge" in result.model_note()


def test_labelled_files_are_checked_line_by_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"item_id": "a", "app": "x", "query": "q", "criterion": "c", '
        '"actual_response": "r", "label": "MAYBE"}\n'
    )
    with pytest.raises(LabelledFileError, match=r"bad.jsonl:1: label"):
        read_labelled(bad)
    two = (
        write_labelled(tmp_path / "a.jsonl", 2).read_text()
        + write_labelled(tmp_path / "b.jsonl", 2, app="other").read_text()
    )
    (tmp_path / "two.jsonl").write_text(two)
    with pytest.raises(LabelledFileError, match="several apps"):
        asyncio.run(
            score_labelled_file(
                tmp_path / "two.jsonl",
                CalibrationStore.open(f"sqlite:///{tmp_path / 's.db'}"),
                [],
                CascadeSettings(),
            )
        )


def test_scoring_a_labelled_file_twice_calls_no_judge_twice(
    store: CalibrationStore, tmp_path: Path
) -> None:
    path = write_labelled(tmp_path / "labels.jsonl", 20)
    providers = three_providers()
    records = asyncio.run(
        score_labelled_file(path, store, tier_clients(*providers), CascadeSettings())
    )
    assert sorted({r.tier for r in records}) == [1, 2, 3]
    assert len(records) == 60
    assert {r.label for r in records} == {"YES", "NO"}
    again = asyncio.run(
        score_labelled_file(path, store, tier_clients(*providers), CascadeSettings())
    )
    assert [len(p.calls) for p in providers] == [100, 100, 100]
    assert sorted(again, key=lambda r: (r.item_id, r.tier)) == sorted(
        records, key=lambda r: (r.item_id, r.tier)
    )


def test_the_labels_command_records_thresholds_and_names_tier_models(
    store: CalibrationStore, tmp_path: Path
) -> None:
    path = write_labelled(tmp_path / "labels.jsonl", 40)
    providers = three_providers()
    run = asyncio.run(
        calibrate_from_labels(
            path,
            FitSpec(alpha=0.2, delta=0.1, mode="system"),
            store=store,
            clients=tier_clients(*providers),
            tier_models="a:x,b:y,c:z",
        )
    )
    assert run.published == 0
    assert [t.tier for t in run.result.thresholds] == [1, 2, 3]
    assert [t.mode for t in store.latest_thresholds("nutrition")] == ["system"] * 3
    assert run.result.models == ("fake:tier1", "fake:tier2", "fake:tier3")


def test_reag_calibrate_labels_runs_the_judges_through_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from shell.cli.main import app
    from shell.kafka_io import labels

    providers = three_providers()
    monkeypatch.setattr(
        labels, "make_tier_clients", lambda settings, service: tier_clients(*providers)
    )
    monkeypatch.setenv("REAG_STATE_DIR", str(tmp_path / "state"))
    path = write_labelled(tmp_path / "labels.jsonl", 40)
    runner = CliRunner()
    # --min-accepted 20: the 20 SURE items are fewer than the default 30.
    args = ["calibrate", "--labels", str(path), "--alpha", "0.2", "--delta", "0.1", "--json",
            "--min-accepted", "20"]  # fmt: skip
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    calls = [len(p.calls) for p in providers]
    # Cascade mode: tier 1 judges all 40 items (5 annotators each); tiers 2 and 3 only
    # the 20 that tier 1 does not accept.
    assert calls == [200, 100, 100]
    second = runner.invoke(app, args)
    assert second.exit_code == 0, second.output
    assert [len(p.calls) for p in providers] == calls  # all scores came from the store
    assert first.output == second.output
    tiers = json.loads(first.output)["tiers"]
    assert tiers["1"]["threshold"] == pytest.approx(0.601)  # just above the 0.6 UNSURE items
    assert tiers["1"]["n_accepted"] == 20
    assert tiers["1"]["min_accepted"] == json.loads(first.output)["min_accepted"] == 20
    assert tiers["2"]["threshold"] is None
    assert json.loads(first.output)["published"] == 0
