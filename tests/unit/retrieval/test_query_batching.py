"""Queries waiting together are encoded in one call, one call at a time (mechanics, fake model)."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import numpy.typing as npt
import pytest

from reag.retrieval.query_batching import QueryEncoder

pytestmark = pytest.mark.timeout(30)


class GatedEncoder:
    """Encodes a text as [len(text)]; each call waits for the gate, counts what overlapped."""

    def __init__(self, *, fail_on: str = "") -> None:
        self.calls: list[list[str]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.started = threading.Event()
        self.running = 0
        self.most_at_once = 0
        self.fail_on = fail_on
        self._lock = threading.Lock()

    def encode(self, texts: list[str]) -> npt.NDArray[np.float32]:
        with self._lock:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        try:
            self.calls.append(list(texts))
            self.started.set()
            assert self.gate.wait(10)
            if self.fail_on in texts:
                raise RuntimeError("model failed")
            return np.array([[float(len(t))] for t in texts], dtype=np.float32)
        finally:
            with self._lock:
                self.running -= 1


async def _started(encoder: GatedEncoder) -> None:
    """Until the first call is in the model."""
    assert await asyncio.to_thread(encoder.started.wait, 10)


async def _held_in_the_model(
    queries: QueryEncoder, model: GatedEncoder, text: str
) -> asyncio.Future[npt.NDArray[np.float32]]:
    """An encode of ``text`` that the closed gate holds in the model: what follows waits."""
    model.gate.clear()
    held = asyncio.ensure_future(queries.encode(text))
    await _started(model)
    return held


async def test_queries_that_wait_during_an_encode_go_to_the_model_as_one_batch() -> None:
    model = GatedEncoder()
    queries = QueryEncoder(model)
    first = await _held_in_the_model(queries, model, "a")
    rest = [asyncio.ensure_future(queries.encode("b" * n)) for n in range(2, 12)]
    await asyncio.sleep(0.01)
    model.gate.set()
    vectors = await asyncio.gather(first, *rest)

    assert model.calls == [["a"], ["b" * n for n in range(2, 12)]]
    assert [float(v[0]) for v in vectors] == [1.0, *[float(n) for n in range(2, 12)]]
    assert model.most_at_once == 1
    assert queries.batches == 2


async def test_a_batch_never_exceeds_max_batch_and_every_text_gets_its_own_vector() -> None:
    model = GatedEncoder()
    model.gate.clear()
    queries = QueryEncoder(model, max_batch=4)
    tasks = [asyncio.ensure_future(queries.encode("x" * n)) for n in range(1, 11)]
    await _started(model)
    model.gate.set()
    vectors = await asyncio.gather(*tasks)

    assert [len(c) for c in model.calls] == [4, 4, 2]
    assert [float(v[0]) for v in vectors] == [float(n) for n in range(1, 11)]
    assert model.most_at_once == 1


async def test_a_failed_encode_fails_its_batch_only() -> None:
    model = GatedEncoder(fail_on="bad")
    queries = QueryEncoder(model)
    blocker = await _held_in_the_model(queries, model, "first")
    failing = [asyncio.ensure_future(queries.encode(t)) for t in ("ok", "bad")]
    await asyncio.sleep(0.01)
    model.gate.set()
    assert float((await blocker)[0]) == 5.0
    results = await asyncio.gather(*failing, return_exceptions=True)
    assert all(isinstance(r, RuntimeError) for r in results)
    assert float((await queries.encode("after"))[0]) == 5.0


async def test_a_caller_that_gave_up_while_waiting_is_not_encoded() -> None:
    model = GatedEncoder()
    queries = QueryEncoder(model)
    blocker = await _held_in_the_model(queries, model, "first")
    gone = asyncio.ensure_future(queries.encode("gone"))
    kept = asyncio.ensure_future(queries.encode("kept"))
    await asyncio.sleep(0.01)
    gone.cancel()
    model.gate.set()
    await blocker
    assert float((await kept)[0]) == 4.0
    assert model.calls == [["first"], ["kept"]]


def test_one_encoder_serves_one_event_loop_after_another() -> None:
    model = GatedEncoder()
    queries = QueryEncoder(model)
    first = asyncio.run(queries.encode("one"))
    second = asyncio.run(queries.encode("three"))
    assert (float(first[0]), float(second[0])) == (3.0, 5.0)


def test_max_batch_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_batch"):
        QueryEncoder(GatedEncoder(), max_batch=0)
