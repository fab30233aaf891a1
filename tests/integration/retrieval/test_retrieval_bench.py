"""The retrieval benchmark runs on any labelled app and picks a default by leaving a corpus out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import retrieval as bench_retrieval

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_two_corpora_give_tables_a_leave_one_out_choice_and_the_default_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REAG_STATE_DIR", str(tmp_path / "state"))
    args = ["--icralm-every", "0", "--rerank-every", "0", "--limit", "8"]
    for app in ("banking", "nutrition"):
        args += ["--manifest", str(EXAMPLES / app / "app.yaml")]
        args += ["--bench", str(EXAMPLES / app / "retrieval_bench.yaml")]
    assert bench_retrieval.main([*args, "--out", str(tmp_path / "out")]) == 0

    report = (tmp_path / "out" / "retrieval.md").read_text(encoding="utf-8")
    assert "### banking: 35 documents, 8 intentions" in report
    assert "### nutrition: 84 documents, 8 intentions" in report
    loco = report.split("### Leave one corpus out", 1)[1]
    assert loco.count("\n| banking |") == 1
    assert loco.count("\n| nutrition |") == 1
    assert report.count("The production default (`RetrieverConfig()`: RRF(BM25, embedding)") == 2

    selections = json.loads((tmp_path / "out" / "retrieval.json").read_text(encoding="utf-8"))
    default = selections["banking"]["RRF(BM25, embedding) + k=6, max 6, pinned persona + always"]
    assert len(default["ids"]) == 8
    assert all(len(kept) == 6 for kept in default["selected"])
    # The baseline keeps exactly five.
    assert {len(kept) for kept in selections["nutrition"]["BM25, k=5"]["selected"]} == {5}
    # Whole-document vectors were cached apart from passage vectors.
    cached = sorted(p.name for p in (tmp_path / "state").rglob("*.npz"))
    assert any("-p0.npz" in name for name in cached)
    assert any("-p128.npz" in name for name in cached)
