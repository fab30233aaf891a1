"""Store errors never quote the statement's bound parameters (user text) in logs or messages."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from reag.storage import make_engine

POSTGRES_DSN = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
SECRET = "jane.doe@example.com card 4111 1111 1111 1111"


@pytest.mark.parametrize(
    "dsn",
    [
        pytest.param("sqlite", id="sqlite"),
        pytest.param(POSTGRES_DSN, id="postgres", marks=pytest.mark.postgres),
    ],
)
def test_a_failed_statement_logs_no_bound_parameter(
    dsn: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/s.db" if dsn == "sqlite" else dsn)
    log = logging.getLogger("reag.test.storage")
    try:
        with pytest.raises(SQLAlchemyError) as caught, engine.connect() as conn:
            conn.execute(text("INSERT INTO no_such_table (v) VALUES (:v)"), {"v": SECRET})
        with caplog.at_level(logging.ERROR):
            log.error("store fault", exc_info=caught.value)
    finally:
        engine.dispose()
    assert "no_such_table" in str(caught.value)  # the statement is still there to debug
    assert SECRET not in str(caught.value)
    assert "parameters hidden" in str(caught.value)
    assert SECRET not in caplog.text
