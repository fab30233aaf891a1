"""Model strings to clients: what is chosen, and what is refused up front."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from reag.llm.accounting import Caller, default_ledger
from reag.llm.base import ConfigurationError
from reag.llm.openai_provider import OpenAIProvider
from reag.llm.registry import make_client, parse_model
from reag.llm.remote import ModelServerProvider
from reag.llm.settings import DEFAULT_MODEL, LLMSettings


def settings(**values: object) -> LLMSettings:
    return LLMSettings(_env_file=None, **values)  # type: ignore[arg-type]


def test_parse_model_splits_provider_and_name() -> None:
    assert parse_model("openai:gpt-4.1-mini") == ("openai", "gpt-4.1-mini")
    assert parse_model("gemini:gemini-2.5-flash") == ("gemini", "gemini-2.5-flash")


@pytest.mark.parametrize("model", ["gpt-4.1-mini", "openai:", "anthropic:claude", "fake:x"])
def test_unusable_model_strings_are_configuration_errors(model: str) -> None:
    with pytest.raises(ConfigurationError):
        parse_model(model)


def test_default_model_is_the_local_one_and_never_fake(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REAG_LLM_MODEL", raising=False)
    assert settings().model == DEFAULT_MODEL == "local:qwen2.5-coder-1.5b-instruct"


def test_make_client_charges_the_caller_and_shares_the_ledger() -> None:
    client = make_client(
        "openai:gpt-4.1-mini", caller=Caller("oracle"), settings=settings(openai_api_key="sk-test")
    )
    assert isinstance(client.provider, OpenAIProvider)
    assert client.caller == Caller("oracle")
    assert client.ledger is default_ledger()
    other = make_client("openai:gpt-4.1-mini", settings=settings(openai_api_key="sk-test"))
    assert other.limiter is client.limiter


def test_unpriced_compatible_server_model_is_refused_until_priced(tmp_path: Path) -> None:
    s = settings(openai_base_url="http://127.0.0.1:8000/v1")
    with pytest.raises(ConfigurationError, match="REAG_LLM_PRICES_FILE"):
        make_client("openai:qwen2.5-7b", settings=s)
    prices = tmp_path / "prices.yaml"
    prices.write_text(
        'as_of: "2026-11-30"\nmodels:\n  "openai:qwen2.5-7b": {input: 0, output: 0}\n'
    )
    client = make_client("openai:qwen2.5-7b", settings=s.model_copy(update={"prices_file": prices}))
    assert client.price.output == 0


def test_missing_key_fails_at_make_client() -> None:
    with pytest.raises(ConfigurationError, match="REAG_LLM_GEMINI_API_KEY"):
        make_client("gemini:gemini-2.5-flash", settings=settings())


def test_local_url_routes_local_models_to_the_model_server() -> None:
    client = make_client(settings=settings(local_url="http://127.0.0.1:8765"))
    assert isinstance(client.provider, ModelServerProvider)
    assert client.model == DEFAULT_MODEL


def test_unknown_local_model_lists_the_available_ones() -> None:
    with pytest.raises(ConfigurationError, match="local:gemma-3-270m"):
        make_client("local:llama-70b", settings=settings(local_url="http://x"))


def test_keys_come_from_the_environment_and_stay_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("REAG_LLM_BUDGET_USD", "2.5")
    s = settings()
    assert s.openai_api_key == SecretStr("sk-from-env")
    assert s.budget_usd == 2.5
    assert "sk-from-env" not in repr(s)
    assert "sk-from-env" not in s.model_dump_json()
