"""ICRALM scores on disk, so a rerun (a benchmark, a replayed topic) pays for no call twice.

A score depends only on the model, the context and the target, so the key
is a hash of the three; SQLite makes concurrent readers and a crash mid-run
harmless.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class CachedScore:
    mean: float
    latency_s: float  # what the model took when the score was computed


def score_key(model: str, context: str, target: str) -> str:
    payload = "\x1f".join((model, context, target)).encode("utf-8")
    return hashlib.sha256(payload).hexdigest()


class ScoreCache:
    """``get``/``put`` of a mean log-probability by (model, context, target).

    The seconds the model took are kept with the score, so a benchmark rerun
    from the cache can still report what the scoring cost when it was computed.
    """

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS scores (key TEXT PRIMARY KEY, mean REAL NOT NULL, "
            "n_tokens INTEGER NOT NULL, latency_s REAL NOT NULL DEFAULT 0)"
        )
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(scores)")}
        if "latency_s" not in columns:  # a cache written before latencies were kept
            self._db.execute("ALTER TABLE scores ADD COLUMN latency_s REAL NOT NULL DEFAULT 0")
        self._db.commit()
        self.hits = 0
        self.misses = 0

    def get(self, model: str, context: str, target: str) -> CachedScore | None:
        with self._lock:
            row = self._db.execute(
                "SELECT mean, latency_s FROM scores WHERE key = ?",
                (score_key(model, context, target),),
            ).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return CachedScore(mean=float(row[0]), latency_s=float(row[1]))

    def put(
        self,
        model: str,
        context: str,
        target: str,
        *,
        mean: float,
        n_tokens: int,
        latency_s: float,
    ) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO scores (key, mean, n_tokens, latency_s) "
                "VALUES (?, ?, ?, ?)",
                (score_key(model, context, target), mean, n_tokens, latency_s),
            )
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()
