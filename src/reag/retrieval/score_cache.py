"""ICRALM scores on disk, so a rerun (a benchmark, a replayed topic) pays for no call twice.

A score depends only on the model, the context and the target, so the key
is a hash of the three; SQLite makes concurrent readers and a crash mid-run
harmless.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path


def score_key(model: str, context: str, target: str) -> str:
    payload = "\x1f".join((model, context, target)).encode("utf-8")
    return hashlib.sha256(payload).hexdigest()


class ScoreCache:
    """``get``/``put`` of a mean log-probability by (model, context, target)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS scores (key TEXT PRIMARY KEY, mean REAL NOT NULL, "
            "n_tokens INTEGER NOT NULL)"
        )
        self._db.commit()
        self.hits = 0
        self.misses = 0

    def get(self, model: str, context: str, target: str) -> float | None:
        with self._lock:
            row = self._db.execute(
                "SELECT mean FROM scores WHERE key = ?", (score_key(model, context, target),)
            ).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return float(row[0])

    def put(self, model: str, context: str, target: str, mean: float, n_tokens: int) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO scores (key, mean, n_tokens) VALUES (?, ?, ?)",
                (score_key(model, context, target), mean, n_tokens),
            )
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()
