"""Queries that arrive together are encoded together, one model call at a time.

Why: with many events in flight, the retriever encoded each intention in its
own worker thread, so up to six MiniLM passes ran at once on a 2-core
machine. Each pass already spreads over every core, so running them side by
side only adds contention: under ``bench.pipeline``'s zero-latency load the
retriever spent 87 ms of CPU per case, 71 % of it in these encodes, against
about 32 ms for one encode on an idle machine. Here an encode runs only
while no other is running, and the queries that queued meanwhile go to the
model as one batch (``Embedder.encode`` takes a list): one call's fixed cost
is shared, and the batch size follows the load by itself (1 when traffic is
light, as many as waited when it is not).

A query encoded alone gets exactly the vector ``Embedder.encode([text])``
gives. In a batch, sentence-transformers pads the texts to the longest one
and masks the padding, so a vector can differ from the one-at-a-time vector
in the last float bits (tests/integration/retrieval checks 1e-5); rankings change only
between documents whose cosines tie to that precision.
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]

MAX_BATCH = 64


class Encoder(Protocol):
    def encode(self, texts: list[str]) -> npt.NDArray[np.float32]: ...


@dataclass
class _Queue:
    """The waiting queries of one event loop and its one draining task."""

    waiting: list[tuple[str, asyncio.Future[Vector]]] = field(default_factory=list)
    drain: asyncio.Task[None] | None = None


class QueryEncoder:
    """``await encode(text)``: a vector per text, batched with the texts that waited with it.

    State is kept per event loop (a future belongs to the loop that made it),
    so one encoder serves a service's loop and any loop a test or a bench
    starts later.
    """

    def __init__(self, encoder: Encoder, *, max_batch: int = MAX_BATCH) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self.encoder = encoder
        self.max_batch = max_batch
        self.batches = 0  # model calls made, for tests and benches
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Queue] = (
            weakref.WeakKeyDictionary()
        )

    async def encode(self, text: str) -> Vector:
        loop = asyncio.get_running_loop()
        queue = self._queues.get(loop)
        if queue is None:
            queue = self._queues[loop] = _Queue()
        future: asyncio.Future[Vector] = loop.create_future()
        queue.waiting.append((text, future))
        if queue.drain is None or queue.drain.done():
            queue.drain = loop.create_task(self._drain(queue))
        return await future

    async def _drain(self, queue: _Queue) -> None:
        while queue.waiting:
            batch = queue.waiting[: self.max_batch]
            del queue.waiting[: self.max_batch]
            # A caller cancelled while waiting (its event was revoked or timed out) costs nothing.
            batch = [(text, future) for text, future in batch if not future.done()]
            if not batch:
                continue
            self.batches += 1
            try:
                vectors = await asyncio.to_thread(self.encoder.encode, [t for t, _ in batch])
            except Exception as exc:  # noqa: BLE001 - every waiter gets the model's error
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            except BaseException:
                # The loop is stopping: nobody is left to wait, but no future stays pending.
                for _, future in [*batch, *queue.waiting]:
                    future.cancel()
                queue.waiting.clear()
                raise
            for (_, future), vector in zip(batch, vectors, strict=True):
                if not future.done():
                    future.set_result(vector)
