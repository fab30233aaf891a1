from __future__ import annotations

import pytest

from reag.drafting.settings import SpecSettings


def test_temperatures_default_to_the_papers_table_3() -> None:
    settings = SpecSettings()
    assert settings.orchestrator.temperature == 0.5
    assert settings.interviewer.temperature == 1.0
    assert settings.stakeholder.temperature == 1.0
    assert settings.generator.temperature == 0.8
    assert settings.refactor.temperature == 0.2
    assert settings.max_turns == 10


def test_each_agent_is_configurable_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REAG_SPEC_GENERATOR__TEMPERATURE", "0.3")
    monkeypatch.setenv("REAG_SPEC_REFACTOR__MODEL", "openai:gpt-4.1-mini")
    monkeypatch.setenv("REAG_SPEC_MAX_TURNS", "4")
    settings = SpecSettings()
    assert settings.generator.temperature == 0.3
    assert settings.generator.max_tokens == 128  # the rest of the default survives
    assert settings.refactor.model == "openai:gpt-4.1-mini"
    assert settings.max_turns == 4


def test_more_than_ten_turns_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REAG_SPEC_MAX_TURNS", "11")
    with pytest.raises(ValueError, match="max_turns"):
        SpecSettings()
