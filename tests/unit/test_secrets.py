"""Secrets (the store DSN, API keys, tokens, the SASL password) are never printed: not in a
settings repr or dump, not by `reag status`, not in an error a command prints; and `.env`,
where pydantic-settings reads them from, is kept out of git."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from reag.llm.settings import LLMSettings
from reag.settings import ReagSettings, shown_dsn
from services.elicitor.settings import ElicitorSettings
from services.ledger.settings import LedgerSettings
from shell.cli.main import app

ROOT = Path(__file__).parents[2]
SECRETS = {
    "REAG_STORE_DSN": "postgresql+psycopg://reag:DSN-PASSWORD-CANARY@127.0.0.1:1/reag",
    "REAG_LEDGER_GRPC_TOKEN": "GRPC-TOKEN-CANARY",
    "REAG_LLM_OPENAI_API_KEY": "OPENAI-KEY-CANARY",
    "REAG_LLM_GEMINI_API_KEY": "GEMINI-KEY-CANARY",
    "REAG_KAFKA__SASL_PASSWORD": "SASL-PASSWORD-CANARY",
}
CANARIES = ("DSN-PASSWORD-CANARY", "GRPC-TOKEN-CANARY", "KEY-CANARY", "SASL-PASSWORD-CANARY")


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("REAG_KAFKA__SECURITY_PROTOCOL", "SASL_SSL")
    monkeypatch.setenv("REAG_KAFKA__SASL_USERNAME", "reag")
    monkeypatch.setenv("REAG_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)  # no .env of the developer's is read


def assert_hidden(text: str) -> None:
    for canary in CANARIES:
        assert canary not in text


@pytest.mark.usefixtures("secret_env")
def test_settings_hold_secrets_without_showing_them() -> None:
    settings = [ReagSettings(), LedgerSettings(), ElicitorSettings(), LLMSettings()]
    for each in settings:
        assert_hidden(repr(each))
        assert_hidden(str(each))
        assert_hidden(each.model_dump_json())
        assert_hidden(f"{each.model_dump()}")
    reag, ledger, elicitor, llm = settings
    assert isinstance(reag, ReagSettings)
    assert isinstance(reag.store_dsn, SecretStr)
    assert "DSN-PASSWORD-CANARY" in reag.resolved_store_dsn()  # what the store connects with
    assert reag.shown_store_dsn() == "postgresql+psycopg://reag:***@127.0.0.1:1/reag"
    assert isinstance(ledger, LedgerSettings)
    assert ledger.ledger_grpc_token is not None
    assert ledger.ledger_grpc_token.get_secret_value() == "GRPC-TOKEN-CANARY"
    assert isinstance(elicitor, ElicitorSettings)
    assert elicitor.kafka.sasl_password is not None
    assert isinstance(llm, LLMSettings)
    assert llm.openai_api_key is not None


def test_a_dsn_is_shown_with_its_password_masked() -> None:
    assert shown_dsn("postgresql://u:p%40ss@db:5432/x") == "postgresql://u:***@db:5432/x"
    assert shown_dsn("sqlite:////tmp/reag.db") == "sqlite:////tmp/reag.db"
    assert "secret" not in shown_dsn("not a url with secret")


@pytest.mark.usefixtures("secret_env")
def test_reag_status_prints_no_secret() -> None:
    result = CliRunner().invoke(app, ["status"])
    assert_hidden(result.output)


@pytest.mark.usefixtures("secret_env")
def test_a_store_that_cannot_be_reached_is_reported_without_its_password() -> None:
    """Port 1 refuses at once: the error goes through SQLAlchemy and psycopg unmasked."""
    result = CliRunner().invoke(app, ["results"])
    assert result.exit_code == 2
    assert "postgresql+psycopg://reag:***@127.0.0.1:1/reag cannot be read" in result.output
    assert_hidden(result.output)
    assert_hidden(repr(result.exception))
    assert_hidden(str(result.exception))


def test_dotenv_files_are_ignored_by_git() -> None:
    ignored = {line.strip() for line in (ROOT / ".gitignore").read_text().splitlines()}
    assert ".env" in ignored
    assert ".env.*" in ignored
    # Every settings class that reads .env reads it from the working directory.
    assert ReagSettings.model_config.get("env_file") == ".env"
    assert LLMSettings.model_config.get("env_file") == ".env"
