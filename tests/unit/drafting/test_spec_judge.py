from __future__ import annotations

import json
from typing import Any

from reag.drafting.judge import SpecJudge
from reag.drafting.prompts import JUDGE_RUBRIC
from reag.drafting.settings import SpecSettings

GRADE = json.dumps(
    {
        "ambiguity": "precise",
        "completeness": "misses allergens",
        "consistency": "fine",
        "correctness": "agrees",
        "grade": 3,
    }
)


async def test_grade_comes_with_rubric_findings_and_settings(fakes: Any) -> None:
    client, provider = fakes.client(GRADE)
    out = await SpecJudge(client, SpecSettings().judge).grade("gen text", "ref text", 5)
    assert out["value"] == 3
    assert out["rubric"] == JUDGE_RUBRIC
    for criterion in ("ambiguity", "completeness", "consistency", "correctness"):
        assert criterion in JUDGE_RUBRIC
    assert out["findings"]["completeness"] == "misses allergens"
    assert out["settings"]["generated_cut"] is True  # 8 characters cut to 5
    prompt = fakes.user_text(provider.calls[0].payload)
    assert "<untrusted_generated_srs>\ngen t\n</untrusted_generated_srs>" in prompt
    assert provider.calls[0].options["temperature"] == 0.0


async def test_grade_outside_one_to_four_is_no_grade(fakes: Any) -> None:
    client, _ = fakes.client(GRADE.replace('"grade": 3', '"grade": 7'))
    out = await SpecJudge(client, SpecSettings().judge).grade("g", "r", 100)
    assert out["value"] is None
    assert "no grade" in out["error"]
    assert out["rubric"] == JUDGE_RUBRIC
