"""The demo's calibration step, wired end to end on scripted judges (mechanics only).

Runs ``shell.demo._calibrate`` on a small labelled app: the stored scores the
manifest names are checked and imported, nothing else is scored, the
thresholds it prints are the ones it publishes. The judges are scripted and
publishing is captured, so no model and no broker is needed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from reag.apps import load_app
from reag.calibration.store import CalibrationStore
from reag.calibration_run.clients import build_judges
from reag.calibration_run.files import read_labelled
from reag.calibration_run.snapshot import snapshot_line, snapshot_name
from reag.judging.settings import CascadeSettings
from reag.llm.client import LLMClient
from reag.llm.scripted import FakeProvider
from reag.v1 import events_pb2 as pb
from shell import demo

from .labelled_data import marker_script, write_labelled


def providers() -> list[FakeProvider]:
    return [FakeProvider(model=f"fake:tier{t}", label_script=marker_script()) for t in (1, 2, 3)]


async def write_scores(folder: Path, labels: Path, settings: CascadeSettings) -> None:
    store = CalibrationStore.open(f"sqlite:///{folder.parent / 'maker.db'}")
    store.add_items(read_labelled(labels))
    judges = build_judges(store, "nutrition", [LLMClient(p) for p in providers()], settings)
    for judge in judges:
        lines = [
            json.dumps(
                snapshot_line(
                    judge,
                    item,
                    await judge.judge(item.request, exclude_item=item.item_id),
                    seconds=1.0,
                    example=False,
                )
            )
            for item in store.items("nutrition")
        ]
        (folder / snapshot_name(judge.model, judge.prompt_version)).write_text(
            "\n".join(lines) + "\n"
        )


async def test_the_demo_calibrates_from_checked_stored_scores_and_publishes_what_it_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    labels = write_labelled(tmp_path / "calibration.jsonl", 80)
    (tmp_path / "doc.md").write_text("# Requirement\nFlag sugar.\n")
    (tmp_path / "app.yaml").write_text(
        "name: nutrition\ncorpus: [doc.md]\ncalibration: calibration.jsonl\n"
        "calibration_scores: scores/\n"
    )
    monkeypatch.setenv("REAG_STORE_DSN", f"sqlite:///{tmp_path / 'demo.db'}")
    monkeypatch.setenv("REAG_ANNOTATORS", "3")
    monkeypatch.setenv("REAG_EXAMPLES", "2")
    (tmp_path / "scores").mkdir()
    await write_scores(tmp_path / "scores", labels, CascadeSettings())
    fakes = providers()
    monkeypatch.setattr(
        "shell.kafka_io.labels.make_tier_clients",
        lambda _settings, _service: [LLMClient(p) for p in fakes],
    )
    published: list[pb.Threshold] = []

    async def capture(_kafka: object, thresholds: Sequence[pb.Threshold], **_: object) -> int:
        published.extend(thresholds)
        return len(thresholds)

    monkeypatch.setattr("shell.kafka_io.labels.publish_thresholds", capture)
    lines: list[str] = []
    config = load_app(tmp_path / "app.yaml")
    options = demo.DemoOptions(manifest=tmp_path / "app.yaml", alpha=0.2, delta=0.1)
    thresholds = await demo._calibrate(config, options, lines.append)
    text = "\n".join(lines)
    assert "3 re-judged at random and equal" in text
    assert "scored 0" in text or "0 scored" in text, text
    assert [len(p.calls) for p in fakes] == [3 * 3] * 3  # the re-judged sample only
    assert published == thresholds
    assert any(t.has_threshold for t in thresholds)
    assert "λ̂ =" in text
