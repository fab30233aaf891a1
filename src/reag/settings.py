"""Settings shared by every part of reag; each service extends ``ReagSettings``.

All values come from the environment (prefix ``REAG_``) or a ``.env`` file,
are validated at start, and are documented here field by field. Secrets are
``SecretStr`` so they never reach a log line or a repr.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


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
    store_dsn: str | None = Field(
        default=None,
        description=(
            "SQLAlchemy URL of the SQL store (corpus, results, calibration). Unset: SQLite "
            "at <state_dir>/reag.db. Production: postgresql+psycopg://user:pass@host/db."
        ),
    )
    log_level: str = Field(default="INFO", description="Python logging level.")

    def resolved_store_dsn(self) -> str:
        if self.store_dsn:
            return self.store_dsn
        return f"sqlite:///{(self.state_dir / 'reag.db').resolve()}"
