"""``python -m bench cases``: stages run and are stored, a rerun calls no model, the figures add up.

The scripted model stands in for every stage (it is deterministic and instant); the
retrieval is BM25 so no embedding model loads. The statistics are checked on a hand-made
set of four cases whose every figure is worked out in the test.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from scipy import stats

from bench.case_sets import CASE_FILES, Case, load_case_set
from bench.cases import (
    STAGES,
    CaseRun,
    Outcomes,
    Rate,
    calibrated_outcome,
    citations,
    citing,
    default_factory,
    duplicates,
    parse,
    raw_outcome,
    run_app,
    undecidable,
)
from reag.llm.client import LLMClient
from reag.retrieval.retriever import RetrieverConfig

BM25 = RetrieverConfig(kernel="bm25")


def _refuse(model: str) -> LLMClient:
    raise AssertionError(f"a stored stage called {model}")


def test_stages_are_stored_and_a_rerun_reads_them_without_a_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REAG_LLM_ALLOW_SCRIPTED", "1")
    args = parse(["--apps", "banking", "--slice", "2", "--model", "scripted:n3"])
    args.store = tmp_path
    runs, runner = asyncio.run(run_app("banking", args, default_factory, BM25))
    assert [r.case.id for r in runs] == ["bk-001", "bk-002"]
    stored = {(stage, case) for stage, case, _ in runner.store.records}
    assert stored == {(s, c) for s in STAGES for c in ("bk-001", "bk-002")}
    assert all(len(r.criteria) == 3 == len(r.p_yes) for r in runs)
    assert all(r.selected and r.calls > 0 for r in runs)
    assert all(r.raw == r.criteria for r in runs)  # the scripted oracle writes clean criteria
    lines = (tmp_path / "banking.jsonl").read_text().splitlines()
    assert len(lines) == 8

    again, _ = asyncio.run(run_app("banking", args, _refuse, BM25))
    assert [(r.criteria, r.p_yes, r.selected) for r in again] == [
        (r.criteria, r.p_yes, r.selected) for r in runs
    ]
    assert len((tmp_path / "banking.jsonl").read_text().splitlines()) == 8

    # Another judge model: only the judge stage is redone; the refusing factory proves
    # the earlier stages were read back.
    args.judge_model = "scripted:other-n3"
    with pytest.raises(AssertionError, match="scripted:other-n3"):
        asyncio.run(run_app("banking", args, _refuse, BM25))

    # Criteria quoted from the shown rules instead of the draft's: again only the judge
    # stage is redone, and every criterion cites one document retrieval kept.
    args.judge_model = None
    with pytest.raises(AssertionError, match="scripted:n3"):
        asyncio.run(run_app("banking", args, _refuse, BM25, criteria="rules"))
    quoted, _ = asyncio.run(run_app("banking", args, default_factory, BM25, criteria="rules"))
    for run in quoted:
        assert run.sources
        assert len(run.sources) == len(run.criteria) == len(run.p_yes)
        assert all(len(s) == 1 and s[0] in run.selected for s in run.sources)
        assert all(c.startswith("PASS if the response ") for c in run.criteria)
        assert run.criteria != runs[0].criteria


def _case(expected: str, must: tuple[str, ...] = ("requirement/FR-01",)) -> Case:
    failing = expected == "FAIL"
    return Case(
        id=f"c-{expected}",
        request={"query": "q"},
        response="r",
        expected=expected,
        must_check=must,
        kind="wrong_fact" if failing else None,
        reason="because" if failing else None,
    )


def test_outcomes_and_rates_on_a_hand_computed_example() -> None:
    p_yes = [[0.9, 0.8], [0.9, 0.3], [0.2], [0.7]]
    expected = ["PASS", "PASS", "FAIL", "FAIL"]
    raw = [raw_outcome(p) for p in p_yes]
    assert raw == ["PASS", "FAIL", "FAIL", "PASS"]
    outcomes = Outcomes(tuple(zip(expected, raw, strict=True)))
    assert outcomes.decided == Rate(4, 4)
    assert outcomes.agreement == Rate(2, 4)
    assert outcomes.false_pass == Rate(1, 2)
    assert outcomes.false_fail == Rate(1, 2)
    assert outcomes.balanced == 0.5

    calibrated = [calibrated_outcome(p, 0.75) for p in p_yes]
    assert calibrated == ["PASS", "ABSTAIN", "FAIL", "ABSTAIN"]
    outcomes = Outcomes(tuple(zip(expected, calibrated, strict=True)))
    assert outcomes.decided == Rate(2, 4)
    assert outcomes.agreement == Rate(2, 2)
    assert outcomes.false_pass == Rate(0, 1)
    assert outcomes.balanced == 1.0
    assert calibrated_outcome([0.99], None) == "ABSTAIN"

    low = stats.beta.ppf(0.025, 1, 2)
    high = stats.beta.ppf(0.975, 2, 1)
    assert str(Rate(1, 2)) == f"{0.5:6.1%} [{low:.0%}, {high:.0%}] (1/2)"


def test_fixed_checkers_count_duplicates_undecidable_and_at_most_two_citations() -> None:
    assert (
        duplicates(
            [
                "PASS if the response tells the customer to freeze the card in the app",
                "PASS if the response tells the customer to freeze their card in the app",
                "FAIL if the response asks for the PIN",
            ]
        )
        == 1
    )
    assert (
        undecidable(
            [
                "PASS if the red badge is shown",
                "FAIL if the application allows the user to proceed with the purchase",
                "PASS if the response states the overdraft rate of 39.9% EAR",
            ]
        )
        == 2
    )
    known = ["requirement/FR-01", "requirement/FR-1", "domain_knowledge/DK-7", "nfr/NFR-1"]
    assert citations("PASS if it freezes the card (FR-01, DK-7, NFR-1)", known) == [
        "requirement/FR-01",
        "domain_knowledge/DK-7",
    ]
    run = CaseRun(
        _case("PASS", ("requirement/FR-01", "nfr/NFR-1", "persona/PER-1")),
        selected=[],
        criteria=["PASS if it freezes the card (FR-01, DK-7)", "FAIL if it asks for a PIN"],
        p_yes=[0.9, 0.9],
        seconds=0.0,
        calls=0,
    )
    cited = citing(run, known)
    assert (cited.covered, cited.must, cited.cited) == (1, 3, 2)


def test_the_nutrition_cases_keep_their_calibration_items_for_cross_fitting() -> None:
    cases = load_case_set(CASE_FILES["nutrition"]).cases
    assert all(c.items for c in cases)


def test_nutrition_thresholds_are_cross_fitted_without_the_case_s_own_items() -> None:
    from bench.cases import ALPHA, DELTA, SCORES, cross_fitted_thresholds
    from reag.calibration import fit_threshold
    from reag.calibration_run.snapshot import read_snapshot

    model, version = "local:qwen2.5-coder-1.5b-instruct", "judge-prompt-v4/n1k3s0/c870f0489f95313e"
    case = load_case_set(CASE_FILES["nutrition"]).cases[0]
    run = CaseRun(case, [], ["PASS if x"], [0.9], 0.0, 0)
    thresholds = cross_fitted_thresholds([run], model, version)
    assert thresholds is not None
    lines = read_snapshot(next(SCORES.glob("qwen2.5-coder-1.5b-instruct.*n1k3s0*.jsonl")))
    rows = [v for k, v in lines.items() if k not in case.items and not v.get("example")]
    fit = fit_threshold(
        [r["confidence"] for r in rows],
        [r["verdict"] != r["label"] for r in rows],
        alpha=ALPHA,
        delta=DELTA,
    )
    assert thresholds[case.id] == fit.threshold
    assert len(rows) < len(lines)
    banking = load_case_set(CASE_FILES["banking"]).cases[0]
    assert cross_fitted_thresholds([CaseRun(banking, [], [], [], 0.0, 0)], model, version) is None


def test_an_app_without_labels_borrows_the_threshold_of_every_example_item() -> None:
    """Day one in the bench: the pool is the example app's items, never the app measured."""
    from bench.cases import calibrated_outcome, provisional_threshold, report

    model, version = "local:qwen2.5-coder-1.5b-instruct", "judge-prompt-v4/n1k3s0/c870f0489f95313e"
    borrowed = provisional_threshold(model, version)
    assert borrowed is not None
    assert borrowed == pytest.approx(0.643)  # the demo's λ̂ at α = 0.30: the same fit
    assert provisional_threshold(model, "judge-prompt-v0/none") is None
    assert calibrated_outcome([0.99, 0.9], borrowed) == "PASS"
    assert calibrated_outcome([0.99, 0.6], borrowed) == "ABSTAIN"
    banking = load_case_set(CASE_FILES["banking"]).cases[0]
    text = report(
        "banking", [CaseRun(banking, [], ["PASS if x"], [0.99], 0.0, 0)], [], None, borrowed
    )
    assert "provisional (λ̂ 0.643 borrowed from nutrition): decided 100.0%" in text
