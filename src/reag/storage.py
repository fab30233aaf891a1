"""The SQL store: SQLite embedded, PostgreSQL in production, one SQLAlchemy code path.

Each area (corpus, ledger, calibration) declares its tables on ``Base`` in its
own module; ``open_store`` creates what is missing. The embedded broker keeps
nothing across restarts, so everything durable lives here.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import DeclarativeBase, sessionmaker


class Base(DeclarativeBase):
    pass


def make_engine(dsn: str) -> Engine:
    """An engine whose errors never quote the statement's bound parameters.

    ``hide_parameters``: SQLAlchemy otherwise appends the parameters (a user's
    query, an app's response) to every error message, and those messages reach
    logs and dead letters.
    """
    if dsn.startswith("sqlite:///"):
        Path(dsn.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(dsn, connect_args={"timeout": 30}, hide_parameters=True)

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):  # type: ignore[no-untyped-def]
            # WAL lets the ledger write while the CLI reads; several services share one file.
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        return engine
    return create_engine(dsn, pool_pre_ping=True, hide_parameters=True)


def open_store(dsn: str) -> sessionmaker:  # type: ignore[type-arg]
    """Engine + session factory, with every declared table created if missing."""
    engine = make_engine(dsn)
    Base.metadata.create_all(engine)
    return sessionmaker(engine, expire_on_commit=False)
