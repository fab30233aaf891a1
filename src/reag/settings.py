"""Settings shared by every part of reag; each service extends ``ReagSettings``.

All values come from the environment (prefix ``REAG_``) or a ``.env`` file,
are validated at start, and are documented here field by field. Secrets are
``SecretStr`` so they never reach a log line or a repr.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


def shown_dsn(dsn: str) -> str:
    """``dsn`` with its password replaced by ``***``, for messages and logs."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(dsn).render_as_string(hide_password=True)
    except ArgumentError:
        return "<a store URL that does not parse>"


class ReagSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="REAG_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        env_nested_delimiter="__",
    )

    state_dir: Path = Field(
        default=Path(".reag"),
        description="Where the embedded stack keeps its SQLite store, logs and pid files.",
    )
    store_dsn: SecretStr | None = Field(
        default=None,
        description=(
            "SQLAlchemy URL of the SQL store (corpus, results, calibration). Unset: SQLite "
            "at <state_dir>/reag.db. Production: postgresql+psycopg://user:pass@host/db. "
            "A secret (it holds the password): printed only as shown_store_dsn()."
        ),
    )
    log_level: str = Field(default="INFO", description="Python logging level.")
    pseudonym_key: SecretStr | None = Field(
        default=None,
        description=(
            "Key of the HMAC pseudonyms that replace user, case and run ids carrying PII "
            "(reag.traffic.redaction). Unset: a key generated once in <state_dir>/"
            "pseudonym.key (the embedded stack). Production: the same secret in every "
            "service and recorder. Rotating it gives users new pseudonyms from then on "
            "(docs/pipeline.md)."
        ),
    )

    def resolved_store_dsn(self) -> str:
        """The URL to connect with, password included: pass it to the store, never print it."""
        if self.store_dsn is not None and self.store_dsn.get_secret_value():
            return self.store_dsn.get_secret_value()
        return f"sqlite:///{(self.state_dir / 'reag.db').resolve()}"

    def shown_store_dsn(self) -> str:
        """The store's URL as messages may show it: the password masked."""
        return shown_dsn(self.resolved_store_dsn())
