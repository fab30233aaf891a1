"""The local Qwen 1.5B judge has real signal on the example app's expert-labelled items.

Pinned items: the first 12 the experts labelled YES and the first 12 they
labelled NO in examples/nutrition/calibration.jsonl, chosen by position, not
by how the model does on them. The judge is the production one (prompt v4,
one zero-shot annotator to keep the test short); its P(meets the criterion)
must rank the YES items above the NO items with AUC ≥ 0.7. The measured
value is in docs/cascade.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reag.calibration_run.files import read_labelled
from reag.judging.exemplars import AnnotatorSets
from reag.judging.judge import JudgeConfig, TierJudge
from reag.llm import Caller, LLMSettings
from reag.llm.registry import make_client

pytestmark = [pytest.mark.llm, pytest.mark.slow]

LABELS = Path(__file__).resolve().parents[3] / "examples" / "nutrition" / "calibration.jsonl"
MEETS = ("cal-001", "cal-003", "cal-005", "cal-006", "cal-007", "cal-009",
         "cal-010", "cal-011", "cal-012", "cal-013", "cal-014", "cal-015")  # fmt: skip
FAILS = ("cal-002", "cal-004", "cal-008", "cal-017", "cal-018", "cal-019",
         "cal-020", "cal-024", "cal-025", "cal-027", "cal-028", "cal-029")  # fmt: skip


def auc(positives: list[float], negatives: list[float]) -> float:
    """P(a random positive scores above a random negative), ties counting half."""
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def test_the_auc_helper() -> None:
    assert auc([0.9, 0.8], [0.1, 0.2]) == 1.0
    assert auc([0.1], [0.9]) == 0.0
    assert auc([0.5], [0.5]) == 0.5


async def test_qwen_15b_separates_responses_that_meet_their_criterion() -> None:
    items = {i.item_id: i for i in read_labelled(LABELS)}
    assert all(items[i].label == "YES" for i in MEETS)
    assert all(items[i].label == "NO" for i in FAILS)
    client = make_client(
        "local:qwen2.5-coder-1.5b-instruct",
        caller=Caller("tests"),
        settings=LLMSettings(local_url=None, local_slots=2),
    )
    judge = TierJudge(
        client, JudgeConfig(tier=1, n_annotators=1, k_examples=0), AnnotatorSets(((),))
    )
    p_yes = {}
    for item_id in (*MEETS, *FAILS):
        judgement = await judge.judge(items[item_id].request)
        p_yes[item_id] = judgement.mean_p_yes
    measured = auc([p_yes[i] for i in MEETS], [p_yes[i] for i in FAILS])
    print(f"AUC of local:qwen2.5-coder-1.5b-instruct on {len(p_yes)} pinned items: {measured:.3f}")
    assert measured >= 0.7, p_yes
