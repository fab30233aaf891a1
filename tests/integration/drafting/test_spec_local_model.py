"""The agents' mechanics on the real local model (Gemma 3 270M): a short run, end to end.

The text this model writes is poor; what is checked is that every agent ran
on it, the structure held, and the accounting recorded real tokens.
"""

from __future__ import annotations

import csv
import io

import pytest

from reag.drafting.clients import ClientPool
from reag.drafting.settings import AgentSettings, SpecSettings
from reag.drafting.template import Template
from reag.drafting.workflow import Mode, SpecTeam, draft_spec

pytestmark = [pytest.mark.llm, pytest.mark.slow]

TINY = Template.model_validate(
    {
        "id": "tiny",
        "name": "two-section test outline",
        "sections": [
            {
                "number": "1",
                "title": "Introduction",
                "subsections": [{"number": "1.1", "title": "Purpose"}],
            },
            {"number": "2", "title": "Requirements"},
        ],
    }
)

BRIEF = (
    "NutriLens is a phone app. The user photographs a food label; the app rates sugar and "
    "salt with traffic-light thresholds and shows a score card within three seconds."
)


def small(temperature: float, max_tokens: int) -> AgentSettings:
    """Mechanics on the smallest local model, whatever the default model is."""
    return AgentSettings(model="local:gemma-3-270m", temperature=temperature, max_tokens=max_tokens)


async def test_a_short_self_refine_run_on_the_local_model() -> None:
    settings = SpecSettings(
        orchestrator=small(0.5, 48),
        interviewer=small(1.0, 48),
        report=small(1.0, 48),
        stakeholder=small(1.0, 40),
        generator=small(0.8, 40),
        refactor=small(0.2, 160),
        seed=7,
    )
    pool = ClientPool()
    try:
        team = await SpecTeam.from_settings(settings, TINY, pool)
        result = await draft_spec(
            BRIEF,
            team,
            title="NutriLens",
            mode=Mode.SELF_REFINE,
            rounds=1,
            max_turns=2,
            max_corrections=1,
        )
    finally:
        await pool.aclose()

    log = result.log
    assert result.document.unfilled() == []
    assert log.elicitation.turns <= 2
    assert log.elicitation.stop_reason in {"exit_tool", "max_turns", "interviewer_error"}
    assert {step.model for step in log.steps} == {"local:gemma-3-270m"}
    for agent in ("orchestrator", "interviewer", "generator", "refactor"):
        totals = log.per_agent[agent]
        assert totals.prompt_tokens > 0
        assert totals.seconds > 0
    assert log.run.output_tokens == sum(s.completion_tokens for s in log.steps)
    assert log.per_agent["generator"].output_tokens > 0
    rows = list(csv.DictReader(io.StringIO(result.document.to_csv())))
    assert [(r["section"], r["subsection"]) for r in rows] == [
        ("1 Introduction", "1.1 Purpose"),
        ("2 Requirements", ""),
    ]
