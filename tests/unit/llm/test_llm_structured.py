"""Structured output: one bounded repair attempt, then the raw text in the error."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import BaseModel

from reag.llm.accounting import CostLedger
from reag.llm.base import Message, StructuredOutputError
from reag.llm.client import LLMClient
from reag.llm.scripted import FakeProvider
from reag.llm.settings import LLMSettings


class Verdict(BaseModel):
    label: str
    reason: str


def scripted(replies: list[str]) -> Any:
    queue = list(replies)

    def script(_messages: Sequence[Message], _options: dict[str, Any]) -> str:
        return queue.pop(0)

    return script


ASK = [Message("user", "Judge it.")]


async def test_valid_json_parses_without_repair(
    llm_settings: LLMSettings, ledger: CostLedger
) -> None:
    provider = FakeProvider(chat_script=scripted(['{"label": "YES", "reason": "fits"}']))
    result = await LLMClient(provider, settings=llm_settings, ledger=ledger).structured(
        ASK, Verdict
    )
    assert result.value == Verdict(label="YES", reason="fits")
    assert (result.repaired, result.n_calls) == (False, 1)
    assert provider.calls[0].options["json_schema"] == Verdict.model_json_schema()


async def test_broken_json_is_repaired_once_and_both_calls_are_counted(
    llm_settings: LLMSettings, ledger: CostLedger
) -> None:
    provider = FakeProvider(
        model="openai:gpt-4.1-mini",
        chat_script=scripted(['{"label": "YES", "reason": ', '{"label": "NO", "reason": "x"}']),
    )
    client = LLMClient(provider, settings=llm_settings, ledger=ledger)

    result = await client.structured(ASK, Verdict)

    assert result.value.label == "NO"
    assert (result.repaired, result.n_calls) == (True, 2)
    repair_turns = provider.calls[1].payload
    assert repair_turns[-2] == Message("assistant", '{"label": "YES", "reason": ')
    assert "not valid JSON" in repair_turns[-1].content
    assert result.cost_usd == pytest.approx(ledger.total_usd())
    assert ledger.by_caller()[client.caller].calls == 2


async def test_still_broken_after_repair_raises_with_the_raw_text(
    llm_settings: LLMSettings, ledger: CostLedger
) -> None:
    provider = FakeProvider(chat_script=scripted(["not json", '{"label": "YES"}']))
    with pytest.raises(StructuredOutputError) as info:
        await LLMClient(provider, settings=llm_settings, ledger=ledger).structured(ASK, Verdict)
    assert info.value.raw == '{"label": "YES"}'
    assert len(provider.calls) == 2


def test_raw_newlines_inside_json_strings_are_read_not_rejected() -> None:
    """Constrained local decoding can put a literal newline in a string; the content stands."""
    from pydantic import BaseModel

    from reag.llm.client import parse_json_as

    class Note(BaseModel):
        text: str

    assert parse_json_as(Note, '{"text": "line one\nline two"}').text == "line one\nline two"
    with pytest.raises(ValueError, match="not JSON"):
        parse_json_as(Note, "{text: nope")
