"""Cost arithmetic against the price table, and the table's refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from reag.llm.base import ConfigurationError, Usage
from reag.llm.prices import ModelPrice, PriceTable


def test_builtin_table_is_dated_and_prices_the_papers_judges() -> None:
    table = PriceTable.load()
    assert table.as_of[:4].isdigit()
    for model in ("gemini:gemini-2.5-flash-lite", "openai:gpt-4.1-mini", "gemini:gemini-2.5-flash"):
        assert table.lookup(model).output > 0


def test_cost_charges_cached_prompt_tokens_at_their_own_rate() -> None:
    price = ModelPrice(input=0.40, cached_input=0.10, output=1.60)
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=500_000, cached_tokens=200_000)
    # 800k uncached * 0.40 + 200k cached * 0.10 + 500k out * 1.60, per million
    assert price.cost(usage) == pytest.approx(0.32 + 0.02 + 0.80)


def test_table_cost_matches_hand_arithmetic_for_gpt_4_1_mini() -> None:
    table = PriceTable.load()
    usage = Usage(prompt_tokens=1200, completion_tokens=10, cached_tokens=0)
    p = table.lookup("openai:gpt-4.1-mini")
    assert table.cost("openai:gpt-4.1-mini", usage) == pytest.approx(
        (1200 * p.input + 10 * p.output) / 1e6
    )


def test_local_and_fake_models_cost_nothing() -> None:
    table = PriceTable.load()
    usage = Usage(prompt_tokens=10_000, completion_tokens=10_000)
    assert table.cost("local:gemma-3-270m", usage) == 0.0
    assert table.cost("fake:scripted", usage) == 0.0


def test_dated_snapshot_falls_back_to_its_undated_entry() -> None:
    table = PriceTable.load()
    assert table.lookup("openai:gpt-4.1-mini-2025-04-14") == table.lookup("openai:gpt-4.1-mini")


def test_unpriced_model_is_refused_with_the_setting_to_fix_it() -> None:
    with pytest.raises(ConfigurationError, match="REAG_LLM_PRICES_FILE"):
        PriceTable.load().lookup("openai:my-vllm-model")


def test_override_file_adds_and_replaces_entries(tmp_path: Path) -> None:
    override = tmp_path / "prices.yaml"
    override.write_text(
        'as_of: "2026-11-30"\nmodels:\n'
        '  "openai:my-vllm-model": {input: 0, output: 0}\n'
        '  "openai:gpt-4.1-mini": {input: 1.0, cached_input: 0.5, output: 2.0}\n'
    )
    table = PriceTable.load(override)
    assert table.lookup("openai:my-vllm-model").output == 0
    assert table.lookup("openai:gpt-4.1-mini") == ModelPrice(1.0, 0.5, 2.0)
    assert "2026-11-30" in table.as_of
    assert table.lookup("gemini:gemini-2.5-flash").output > 0  # the rest is kept


def test_malformed_override_names_the_file(tmp_path: Path) -> None:
    override = tmp_path / "bad.yaml"
    override.write_text('models:\n  "openai:x": {input: cheap}\n')
    with pytest.raises(ConfigurationError, match=r"bad\.yaml"):
        PriceTable.load(override)
