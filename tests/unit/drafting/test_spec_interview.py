from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from reag.drafting.agent import RunContext
from reag.drafting.interview import (
    Interviewer,
    InterviewerMove,
    Stakeholder,
    recover_move,
    run_elicitation,
)
from reag.drafting.prompts import INTERVIEWER_REPORT
from reag.drafting.settings import SpecSettings
from reag.llm.base import Message

SETTINGS = SpecSettings()


def agents(fakes: Any, script: Any) -> tuple[Interviewer, Stakeholder, Any, Any, RunContext]:
    context = RunContext()
    inter_client, inter = fakes.client(script)
    stake_client, stake = fakes.client("Shoppers; results within 3 s.")
    interviewer = Interviewer(inter_client, SETTINGS.interviewer, context, SETTINGS.report)
    stakeholder = Stakeholder(stake_client, SETTINGS.stakeholder, context)
    return interviewer, stakeholder, inter, stake, context


async def test_loop_stops_when_the_interviewer_calls_the_exit_tool(fakes: Any) -> None:
    interviewer, stakeholder, inter, stake, context = agents(fakes, fakes.asks_then_exits(3))
    result = await run_elicitation(interviewer, stakeholder, "summary")
    assert result.stop_reason == "exit_tool"
    assert result.turns == 3
    assert [ex.question for ex in result.exchanges] == [
        "Question number 1?",
        "Question number 2?",
        "Question number 3?",
    ]
    assert len(stake.calls) == 3  # no answer is asked for after the exit
    assert len(inter.calls) == 5  # 4 moves (the 4th is the exit) + the report
    assert result.report.startswith("Goals:")
    assert [s.purpose for s in context.log.steps_of("interviewer")][-1] == "elicitation report"


async def test_loop_stops_at_ten_turns_without_the_exit_tool(fakes: Any) -> None:
    interviewer, stakeholder, inter, stake, _ = agents(fakes, fakes.never_exits())
    result = await run_elicitation(interviewer, stakeholder, "summary")
    assert result.stop_reason == "max_turns"
    assert result.turns == 10
    assert len(stake.calls) == 10
    assert len(inter.calls) == 11  # 10 questions + the report, no 11th question


async def test_loop_cap_cannot_be_raised_past_ten(fakes: Any) -> None:
    interviewer, stakeholder, *_ = agents(fakes, fakes.never_exits())
    with pytest.raises(ValueError, match="between 1 and 10"):
        await run_elicitation(interviewer, stakeholder, "summary", max_turns=11)


async def test_interviewer_sees_the_turn_counter_and_the_last_exchange_delimited(
    fakes: Any,
) -> None:
    interviewer, stakeholder, inter, _, _ = agents(fakes, fakes.asks_then_exits(2))
    await run_elicitation(interviewer, stakeholder, "summary")
    second = fakes.user_text(inter.calls[1].payload)
    assert "turn 2 of at most 10" in second
    assert (
        "<untrusted_previous_question>\nQuestion number 1?\n</untrusted_previous_question>"
        in second
    )
    assert (
        "<untrusted_previous_answer>\nShoppers; results within 3 s.\n</untrusted_previous_answer>"
        in second
    )
    # The exit tool is offered as structured output: the schema travels with the call.
    schema = inter.calls[0].options["json_schema"]
    assert schema["properties"]["action"]["enum"] == ["ask", "exit_interview"]


async def test_stakeholder_answers_from_question_and_summary_only(fakes: Any) -> None:
    interviewer, stakeholder, _, stake, _ = agents(fakes, fakes.asks_then_exits(2))
    await run_elicitation(interviewer, stakeholder, "THE SUMMARY")
    second = fakes.user_text(stake.calls[1].payload)
    assert "<untrusted_project_summary>\nTHE SUMMARY\n</untrusted_project_summary>" in second
    assert "Question number 2?" in second
    assert "Question number 1?" not in second
    assert stake.calls[1].options["temperature"] == 1.0


async def test_unparseable_interviewer_ends_the_loop_with_a_report(fakes: Any) -> None:
    def script(messages: Sequence[Message], options: dict[str, Any]) -> str:
        if messages[0].content == INTERVIEWER_REPORT:
            return "Report."
        return "I would like to ask about the users"

    interviewer, stakeholder, _inter, _stake, context = agents(fakes, script)
    result = await run_elicitation(interviewer, stakeholder, "summary")
    assert result.stop_reason == "interviewer_error"
    assert result.turns == 0
    assert result.report == "Report."
    failed = context.log.steps_of("interviewer")[0]
    assert failed.error is not None
    assert "StructuredOutputError" in failed.error
    assert failed.output == "I would like to ask about the users"


def test_ask_without_a_question_is_not_a_valid_move() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        InterviewerMove.model_validate_json(json.dumps({"action": "ask", "question": " "}))
    assert InterviewerMove.model_validate_json('{"action": "exit_interview"}').question == ""


def test_a_tool_call_is_read_from_malformed_json() -> None:
    cut = '{ "action": "ask", "question": "Which users come first?\nAnd'
    move = recover_move(cut)
    assert move is not None
    assert move.question == "Which users come first?"
    assert recover_move('junk {"action": "exit_interview", "question": ') == InterviewerMove(
        action="exit_interview"
    )
    assert recover_move('{"question": "no action"}') is None
    assert recover_move('{"action": "ask", "question": ""}') is None


async def test_recovered_move_keeps_the_loop_going_and_is_noted(fakes: Any) -> None:
    replies = iter(
        ['{"action": "ask", "question": "Who buys it?"} and more text'] * 2
        + ['{"action": "exit_interview"}']
    )

    def script(messages: Sequence[Message], options: dict[str, Any]) -> str:
        if messages[0].content == INTERVIEWER_REPORT:
            return "Report."
        return next(replies)

    interviewer, stakeholder, _, stake, context = agents(fakes, script)
    result = await run_elicitation(interviewer, stakeholder, "summary")
    assert result.stop_reason == "exit_tool"
    assert [ex.question for ex in result.exchanges] == ["Who buys it?"]
    assert len(stake.calls) == 1
    assert "read from the raw text" in context.log.notes[0]
    assert context.log.steps_of("interviewer")[0].error is not None
