"""bench/verdicts.py: judges and cascades from stored score files, on synthetic files.

The files mimic bench.scoring's lines: three models of rising skill (the
strongest separates the labels, the weakest barely), three annotators each,
some items marked as annotator examples.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from reag.calibration.scores import ScoreTable
from reag.calibration.sweep import run_sweep

BENCH = Path(__file__).resolve().parents[3] / "bench" / "verdicts.py"
SMOL = "local:smollm2-135m-instruct"
Q05 = "local:qwen2.5-coder-0.5b-instruct"
Q15 = "local:qwen2.5-coder-1.5b-instruct"
SKILL = {SMOL: 0.3, Q05: 1.2, Q15: 2.5}
SECONDS = {SMOL: 1.5, Q05: 4.0, Q15: 6.0}


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_verdicts", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def _line(model: str, item: str, label: str, yes: list[float], **extra: Any) -> dict[str, Any]:
    mean = sum(yes) / len(yes)
    line = {
        "item_id": item, "tier": 1, "verdict": "YES" if mean > 0.5 else "NO",
        "confidence": max(mean, 1 - mean), "label": label, "persona_category": "p",
        "cost_usd": 0.0, "model": model, "weights_sha256": "ab" * 32,
        "prompt_version": "judge-prompt-v4/n3k3s0/0123456789abcdef", "polarity": "pass",
        "annotator_yes": yes, "example": False, "seconds": SECONDS.get(model, 3.0),
        "prompt_tokens": 3000, "cached_tokens": 1200, "n_calls": 3,
    }  # fmt: skip
    line.update(extra)
    return line


def _write(folder: Path, model: str, lines: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{model.removeprefix('local:')}.judge-prompt-v4.n3k3s0.0123456789abcdef.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def synthetic(
    folder: Path, n_items: int = 200, n_examples: int = 9, seed: int = 3,
    models: tuple[str, ...] = (SMOL, Q05, Q15), limit: dict[str, int] | None = None,
) -> None:  # fmt: skip
    """Each model's annotators see a noisy logit of skill × (label ± 1), plus item hardness."""
    rng = np.random.default_rng(seed)
    labels = rng.random(n_items) < 0.55
    hardness = rng.normal(0.0, 1.0, n_items)
    polarity = np.where(rng.random(n_items) < 0.7, "pass", "fail")
    for model in models:
        grip = SKILL[model] * np.where(labels, 1.0, -1.0) - 0.5 * hardness * np.sign(SKILL[model])
        logits = grip[:, None] + rng.normal(0.0, 1.2, (n_items, 3))
        yes = 1.0 / (1.0 + np.exp(-logits))
        lines = [
            _line(
                model, f"cal-{i:03d}", "YES" if labels[i] else "NO", yes[i].tolist(),
                polarity=str(polarity[i]), example=i < n_examples,
                seconds=SECONDS[model] * (1.0 + 0.1 * (i % 5)),
                prompt_tokens=3000 + i, cached_tokens=1000 + i % 7,
            )
            for i in range(n_items)
        ][: (limit or {}).get(model, n_items)]  # fmt: skip
        _write(folder, model, lines)


def test_n1_and_n2_judges_are_the_first_annotators(bench: ModuleType, tmp_path: Path) -> None:
    # Annotators 0.9, 0.2, 0.3: N1 says YES at 0.9, N2 YES at 0.55, N3 NO at 0.533 (eq. 4).
    # The last item's first two annotators tie at 0.5: N2 is a NO at 0.5.
    _write(tmp_path, Q15, [
        _line(Q15, "a", "YES", [0.9, 0.2, 0.3], seconds=6.0, prompt_tokens=3000,
              cached_tokens=1200, n_calls=3),
        _line(Q15, "b", "NO", [0.7, 0.3, 0.9], seconds=9.0),
    ])  # fmt: skip
    notes: list[str] = []
    scores = bench.load_all(tmp_path, [Q15], notes)[Q15]
    prices = bench.PriceTable.load()
    expected = {1: ([0.9, 0.7], [True, True]), 2: ([0.55, 0.5], [True, False])}
    expected[3] = ([1 - 1.4 / 3, 1.9 / 3], [False, True])
    for n, (confidence, verdict) in expected.items():
        v = bench.view(scores, n, ["a", "b"], prices)
        assert v.confidence == pytest.approx(confidence)
        assert v.verdict_yes.tolist() == verdict
        assert v.seconds.tolist() == pytest.approx([6.0 * n / 3, 9.0 * n / 3])
        assert v.prompt_tokens[0] == pytest.approx(3000 * n / 3)
        assert v.evaluated_tokens[0] == pytest.approx(1800 * n / 3)
        # Qwen-1.5B is priced as Gemini 2.5 Flash: 0.30 / 0.075 / 2.50 USD per million tokens.
        flash = (1800 * 0.30 + 1200 * 0.075 + 3 * 2.50) * 1e-6
        assert v.usd[0] == pytest.approx(flash * n / 3)
    assert not notes


def test_examples_are_kept_out_and_the_halves_partition_the_rest(
    bench: ModuleType, tmp_path: Path
) -> None:
    synthetic(tmp_path, n_items=120, n_examples=9)
    # One more example that only one file marks: the union of marks is kept out.
    path = next(tmp_path.glob("smollm2*.jsonl"))
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[50]["example"] = True
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    notes: list[str] = []
    scores = bench.load_all(tmp_path, [SMOL, Q05, Q15], notes)
    items, n_examples = bench.usable_items(list(scores.values()))
    examples = {f"cal-{i:03d}" for i in (*range(9), 50)}
    assert n_examples == 10
    assert set(items) == {f"cal-{i:03d}" for i in range(120)} - examples
    system = bench.build_system(bench.CASCADES[1], scores, prices=bench.PriceTable.load())
    assert set(system.table().item_ids) == set(items)
    masks = bench.split_masks(items, sorted(items), 20, 0)
    assert len(masks) == 20
    seen = []
    for mask in masks:
        cal = {i for i, m in zip(items, mask.tolist(), strict=True) if m}
        ev = {i for i, m in zip(items, mask.tolist(), strict=True) if not m}
        assert not cal & ev
        assert cal | ev == set(items)
        assert not (cal | ev) & examples
        assert len(cal) == len(items) // 2
        seen.append(frozenset(cal))
    assert len(set(seen)) == 20  # every split draws its own halves
    assert [m.tolist() for m in bench.split_masks(items, sorted(items), 20, 0)] == [
        m.tolist() for m in masks
    ]  # seeded


def test_split_masks_agree_on_shared_items_across_item_sets(bench: ModuleType) -> None:
    universe = [f"i{k:03d}" for k in range(100)]
    full = bench.split_masks(universe, universe, 5, 7)
    subset = universe[::2]
    for whole, part in zip(full, bench.split_masks(subset, universe, 5, 7), strict=True):
        same = sum(whole[2 * k] == part[k] for k in range(len(subset)))
        assert same >= 0.8 * len(subset)


def test_honest_cost_charges_every_tier_that_ran(bench: ModuleType, tmp_path: Path) -> None:
    synthetic(tmp_path, n_items=200)
    scores = bench.load_all(tmp_path, [SMOL, Q05, Q15], [])
    prices = bench.PriceTable.load()
    chain = bench._chain((SMOL, 3), (Q05, 3), (Q15, 3))
    system = bench.build_system(chain, scores, prices)  # SmolLM2 → 0.5B → 1.5B
    table = system.table()
    mask = bench.split_masks(table.item_ids, table.item_ids, 1, 0)[0]
    seconds = system.costs("seconds")[~mask]
    usd = system.costs("usd")[~mask]
    checked = 0
    for alpha in (0.15, 0.25, 0.35):
        result = bench.run_split(system, table, mask, alpha)
        reached = np.where(result.decided == 0, 3, result.decided)
        ran = np.arange(1, 4)[None, :] <= reached[:, None]
        assert result.seconds == pytest.approx(float((seconds * ran).sum()))
        assert result.usd == pytest.approx(float((usd * ran).sum()))
        deciding_only = float(seconds[np.arange(reached.size), reached - 1].sum())
        if (reached > 1).any():
            assert result.seconds > deciding_only
            checked += 1
        # The same split through reag's own sweep: same coverage, agreement and cost.
        ev = table.subset(~mask)
        priced = ScoreTable(
            item_ids=ev.item_ids, labels_yes=ev.labels_yes, confidence=ev.confidence,
            verdict_yes=ev.verdict_yes, present=ev.present, cost_usd=seconds,
            persona_categories=ev.persona_categories,
        )  # fmt: skip
        row = run_sweep(table.subset(mask), priced, alphas=[alpha], delta=0.1).cascade[0]
        assert row.selective.n == int((result.decided != 0).sum())
        assert row.selective.agree == result.agreed
        assert row.cost_per_100 == pytest.approx(100 * result.seconds / ev.n_items)
    assert checked


def test_auc_counts_pairs(bench: ModuleType) -> None:
    rng = np.random.default_rng(0)
    score = np.round(rng.random(60), 1)  # ties on purpose
    positive = rng.random(60) < 0.4
    pairs = [
        1.0 if p > q else 0.5 if p == q else 0.0 for p in score[positive] for q in score[~positive]
    ]
    assert bench.auc(score, positive) == pytest.approx(float(np.mean(pairs)))
    assert bench.auc(score, np.ones(60, dtype=np.bool_)) is None


def test_whole_report_on_synthetic_files(
    bench: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    scores = tmp_path / "scores"
    synthetic(scores, n_items=200, n_examples=9, limit={SMOL: 150})
    monkeypatch.setenv("REAG_BENCH_SCORES_DIR", str(scores))
    monkeypatch.setenv("REAG_BENCH_OUT", str(tmp_path / "out"))
    monkeypatch.delenv("REAG_BENCH_SPLITS", raising=False)
    started = time.perf_counter()
    bench.run()
    assert time.perf_counter() - started < 60
    out = capsys.readouterr().out
    assert "141 (9 examples left out)" in out  # SmolLM2's partial file bounds the common set
    section = out.split("## Each judge alone, every usable item")[1].split("## ")[0]
    judges = {
        row.split(" | ")[0].strip("| "): row.split(" | ")
        for row in section.splitlines()
        if row.startswith("| ") and " N" in row.split(" | ")[0]
    }
    assert len(judges) == 9
    assert judges["Qwen-1.5B N3"][1] == "191"
    assert judges["SmolLM2-135M N1"][1] == "141"
    assert float(judges["Qwen-1.5B N3"][2]) > 0.9
    assert float(judges["Qwen-1.5B N3"][2]) > float(judges["SmolLM2-135M N3"][2])
    for alpha in ("0.10", "0.15", "0.20", "0.25", "0.30", "0.35", "0.40"):
        assert f"### α = {alpha}" in out
        assert sum(line.startswith(f"- α={alpha}") for line in out.splitlines()) == 2
    rows = list(csv.DictReader((tmp_path / "out" / "verdicts.csv").open()))
    cascades = [r for r in rows if r["table"] == "cascade"]
    assert len(cascades) == 7 * len(bench.CASCADES)
    assert all(r["splits"] == "20" for r in cascades)
    strong = [r for r in rows if r["table"] == "judge_selective" and r["system"] == "Qwen-1.5B N3"]
    # A strong judge earns thresholds: it accepts items and its agreement meets 1 − α on them.
    loose = next(r for r in strong if r["alpha"] == "0.30")
    assert float(loose["coverage"]) > 0.3
    assert float(loose["agreement"]) >= 0.7
    # Tiers that ran are charged: the 3-tier cascade never costs less than its first tier on all.
    three = [r for r in cascades if r["system"].startswith("SmolLM2-135M N3 → Qwen-0.5B N3")]
    first_tier = 100 * SECONDS[SMOL] * 1.2  # mean of the 1.0–1.4 factors
    assert all(float(r["seconds_per_100"]) >= 0.95 * first_tier for r in three)
    assert (tmp_path / "out" / "verdicts.md").read_text().startswith("# What a verdict is worth")


def test_missing_model_and_partial_last_line(bench: ModuleType, tmp_path: Path) -> None:
    synthetic(tmp_path, n_items=80, models=(Q15,))
    path = next(tmp_path.glob("qwen2.5-coder-1.5b*.jsonl"))
    path.write_text(path.read_text() + '{"item_id": "cal-9')  # a line being written
    report = bench.build_report(tmp_path, n_splits=3, seed=0)
    text = "\n".join(report.lines)
    assert "local:smollm2-135m-instruct: no score file" in text
    assert "last line is incomplete" in text
    assert "Qwen-0.5B N3 → Qwen-1.5B N3: skipped" in text
    assert "| Qwen-1.5B N1 | 71 |" in text
    path.write_text('{"item_id": \n' + path.read_text())
    with pytest.raises(ValueError, match=":1: not valid JSON"):
        bench.build_report(tmp_path, n_splits=3, seed=0)


def test_files_that_disagree_on_a_label_are_refused(bench: ModuleType, tmp_path: Path) -> None:
    synthetic(tmp_path, n_items=60, models=(Q05, Q15))
    path = next(tmp_path.glob("qwen2.5-coder-0.5b*.jsonl"))
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[30]["label"] = "NO" if lines[30]["label"] == "YES" else "YES"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(ValueError, match="disagree on the expert label of 1 item"):
        bench.build_report(tmp_path, n_splits=2, seed=0)


def test_p3_compares_with_the_strongest_and_the_cheapest_on_target(bench: ModuleType) -> None:
    def pooled(name: str, tiers: int, agreed: int, seconds: float) -> Any:
        return bench.Pooled(name, tiers, 0.3, 100, evaluated=100, accepted=100, agreed=agreed,
                            seconds=seconds)  # fmt: skip

    strong = pooled("A", 1, 90, 900.0)  # CPP 10 s at 90 %
    weak = bench.FullSet("B", bench.Agreement(n=100, agree=60), 60.0, 0.0)  # CPP 1 s at 60 %
    mid = pooled("M", 1, 75, 300.0)  # CPP 4 s at 75 %: the cheapest at ≥ 1 − α = 70 %
    cascades = [pooled("C", 2, 92, 552.0), pooled("D", 2, 80, 240.0)]  # CPP 6 at 92 %, 3 at 80 %
    (first, r1), (second, r2) = bench.p3(0.3, cascades, [strong, mid], [weak])
    assert "strongest single A" in first
    assert "cascade at equal or better agreement: C" in first
    assert r1 == pytest.approx(0.6)
    assert first.endswith("P3 met")
    assert "cheapest single at ≥ 1−α M" in second
    assert r2 == pytest.approx(0.75)
    assert second.endswith("P3 not met")
    (only, ratio), _ = bench.p3(0.3, cascades[1:], [strong, mid], [weak])
    assert ratio is None
    assert "no cascade reaches that agreement" in only
