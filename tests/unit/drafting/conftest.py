"""Scripted models for the requirements agents' unit tests (mechanics only).

Tests run with ``--import-mode=importlib``, so the helpers reach them through
the ``fakes`` fixture rather than an import.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from reag.drafting import prompts
from reag.drafting.agent import RunContext
from reag.drafting.generator import Generator
from reag.drafting.interview import Interviewer, Stakeholder
from reag.drafting.orchestrator import Orchestrator
from reag.drafting.prompts import INTERVIEWER_REPORT
from reag.drafting.refactor import Refactor
from reag.drafting.settings import SpecSettings
from reag.drafting.template import Template
from reag.drafting.workflow import SpecTeam
from reag.llm.base import Message
from reag.llm.client import LLMClient
from reag.llm.scripted import FakeProvider

Script = Callable[[Sequence[Message], dict[str, Any]], str]


def client(script: Script | str) -> tuple[LLMClient, FakeProvider]:
    fixed = script

    def constant(_messages: Sequence[Message], _options: dict[str, Any]) -> str:
        assert isinstance(fixed, str)
        return fixed

    provider = FakeProvider(chat_script=constant if isinstance(script, str) else script)
    return LLMClient(provider), provider


def user_text(messages: Sequence[Message]) -> str:
    return "\n".join(m.content for m in messages if m.role == "user")


def asks_then_exits(n_questions: int) -> Script:
    """An interviewer that asks ``n_questions`` questions, then calls the exit tool."""
    calls = {"n": 0}

    def script(messages: Sequence[Message], options: dict[str, Any]) -> str:
        if messages[0].content == INTERVIEWER_REPORT:
            return "Goals:\n- scan food labels\nQuality needs:\n- score card within 3 s"
        calls["n"] += 1
        if calls["n"] > n_questions:
            return json.dumps({"action": "exit_interview"})
        return json.dumps({"action": "ask", "question": f"Question number {calls['n']}?"})

    return script


def never_exits() -> Script:
    def script(messages: Sequence[Message], options: dict[str, Any]) -> str:
        if messages[0].content == INTERVIEWER_REPORT:
            return "Goals:\n- everything"
        return json.dumps({"action": "ask", "question": "And what else?"})

    return script


def section_writer(blank_first: set[str] | None = None) -> Script:
    """A generator that writes a sentence naming the section; sections in ``blank_first``
    get an empty reply the first time they are asked for."""
    pending = set(blank_first or ())

    def script(messages: Sequence[Message], options: dict[str, Any]) -> str:
        text = user_text(messages)
        marker = "body of section "
        number = text[text.index(marker) + len(marker) :].split(" ", 1)[0]
        if number in pending:
            pending.discard(number)
            return "   "
        return f"The system shall do what section {number} requires."

    return script


def team(
    template: Template,
    *,
    interviewer: Script | None = None,
    generator: Script | None = None,
    refactor: Script | str = '{"commands": []}',
    settings: SpecSettings | None = None,
) -> tuple[SpecTeam, dict[str, FakeProvider]]:
    cfg = settings or SpecSettings()
    context = RunContext()
    orch_client, orch = client("Overview: a food label scanner.")
    int_client, inter = client(interviewer or asks_then_exits(2))
    st_client, stake = client("Users are shoppers; the score card must show within 3 s.")
    gen_client, gen = client(generator or section_writer())
    ref_client, ref = client(refactor)
    built = SpecTeam(
        orchestrator=Orchestrator(orch_client, cfg.orchestrator, context),
        interviewer=Interviewer(int_client, cfg.interviewer, context, cfg.report),
        stakeholder=Stakeholder(st_client, cfg.stakeholder, context),
        generator=Generator(gen_client, cfg.generator, template, context),
        refactor=Refactor(ref_client, cfg.refactor, context),
        context=context,
    )
    providers = {
        "orchestrator": orch,
        "interviewer": inter,
        "stakeholder": stake,
        "generator": gen,
        "refactor": ref,
    }
    return built, providers


def routing_script() -> Script:
    """One scripted model for every agent, answering by the system prompt it is given."""
    asked = {"n": 0}

    def script(messages: Sequence[Message], options: dict[str, Any]) -> str:
        system = messages[0].content
        if system == prompts.ORCHESTRATOR_SUMMARY:
            return "Overview: NutriLens rates food labels."
        if system == prompts.INTERVIEWER_TURN:
            asked["n"] += 1
            if asked["n"] % 2 == 0:
                return json.dumps({"action": "exit_interview"})
            return json.dumps({"action": "ask", "question": "Who are the users?"})
        if system == prompts.INTERVIEWER_REPORT:
            return "Users:\n- shoppers with health conditions"
        if system == prompts.STAKEHOLDER_ANSWER:
            return "Shoppers with diabetes, kidney disease or allergies."
        if system == prompts.REFACTOR_REVIEW:
            return json.dumps(
                {
                    "commands": [
                        {
                            "section": "2.3",
                            "quality": "completeness",
                            "finding": "thin",
                            "command": "Name the groups.",
                        }
                    ]
                }
            )
        if system == prompts.JUDGE_SYSTEM:
            return json.dumps(
                {
                    "ambiguity": "a",
                    "completeness": "b",
                    "consistency": "c",
                    "correctness": "d",
                    "grade": 2,
                }
            )
        return "The system shall rate sugar, salt, fat and saturates."

    return script


@pytest.fixture
def fakes() -> Any:
    return SimpleNamespace(
        client=client,
        user_text=user_text,
        asks_then_exits=asks_then_exits,
        never_exits=never_exits,
        section_writer=section_writer,
        team=team,
        routing_script=routing_script,
    )
