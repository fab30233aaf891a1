"""The model server: one loaded model shared by several services over HTTP.

Each service loading its own copy of the local model costs memory and, on a
machine with few cores, contention; ``reag llm serve`` loads it once and the
services reach it with ``REAG_LLM_LOCAL_URL``. The server does no accounting
(clients price and count what they asked for); it only runs the provider.
An annotator group arrives as one ``/v1/label_probs_many`` request and is run
as one group of the engine, under one hold of the model's lock: requests from
other services cannot slip in between, and the group's prompts spread over
the KV-cache slots, where each annotator's prefix stays cached for the next
group while the other services' one-off prompts take the slot that is
reused least.

The server computes one request at a time (each computation already uses
every core), first come first served, and a request whose client has gone
while it waited (the client's time limit ran out, or it was stopped) is
dropped before it costs anything. Without that, a service that timed out and
retried left its first request in the queue to be computed for nobody: in a
2-core demo the oracle timed out three times behind the retriever's document
checks, and each abandoned generation still ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from reag.llm.base import BatchLabelProvider, ConfigurationError, LLMError, Provider
from reag.llm.wire import (
    ChatRequest,
    LabelManyRequest,
    LabelRequest,
    ScoreRequest,
    error_to_wire,
    from_wire_messages,
    from_wire_prompt,
    result_to_wire,
)

log = logging.getLogger(__name__)


class _ClientGoneError(Exception):
    """The client disconnected while its request waited for its turn."""


class _Turns:
    """One computation at a time, in arrival order (``asyncio.Lock`` is FIFO)."""

    def __init__(self, poll_s: float = 0.5) -> None:
        self._lock = asyncio.Lock()
        self._poll_s = poll_s

    @contextlib.asynccontextmanager
    async def turn(self, request: Request) -> AsyncIterator[None]:
        acquire = asyncio.ensure_future(self._lock.acquire())
        try:
            while not acquire.done():
                await asyncio.wait({acquire}, timeout=self._poll_s)
                if not acquire.done() and await request.is_disconnected():
                    raise _ClientGoneError
            if await request.is_disconnected():
                raise _ClientGoneError
        except BaseException:
            if not acquire.cancel() and not acquire.cancelled() and acquire.exception() is None:
                self._lock.release()  # it was acquired after all: give it back
            raise
        try:
            yield
        finally:
            self._lock.release()


class _Models:
    """The default model, and any other local model a request names, loaded on first use.

    Tiers of the embedded cascade run different local models; one server holds
    them all, so each is loaded once on the machine whichever service asks.
    """

    def __init__(self, default: Provider, load: Callable[[str], Provider] | None) -> None:
        self.default = default
        self._load = load
        self._loaded: dict[str, Provider] = {default.model: default}
        self._lock = asyncio.Lock()

    async def get(self, model: str | None) -> Provider:
        if model is None:
            return self.default
        found = self._loaded.get(model)
        if found is not None:
            return found
        if self._load is None:
            raise ConfigurationError(f"this model server serves {self.default.model} only")
        async with self._lock:
            found = self._loaded.get(model)
            if found is None:
                # Loading weights takes seconds: off the event loop, once.
                found = self._loaded[model] = await asyncio.to_thread(self._load, model)
        return found

    @property
    def names(self) -> list[str]:
        return list(self._loaded)


def create_app(provider: Provider, load: Callable[[str], Provider] | None = None) -> FastAPI:
    """``load`` turns another model string into a provider when a request names one."""
    app = FastAPI(
        title="reag model server",
        version="1",
        description=f"Serves {provider.model} to reag services.",
    )
    models = _Models(provider, load)
    turns = _Turns()

    @app.exception_handler(_ClientGoneError)
    async def client_gone(request: Request, _exc: _ClientGoneError) -> JSONResponse:
        log.info("dropped a %s request whose client left while it waited", request.url.path)
        return JSONResponse(status_code=499, content={"error": "client gone"})

    @app.exception_handler(LLMError)
    async def llm_error(_request: Request, exc: LLMError) -> JSONResponse:
        status, body = error_to_wire(exc)
        return JSONResponse(status_code=status, content=body.model_dump())

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok", "model": provider.model, "loaded": ",".join(models.names)}

    @app.post("/v1/chat")
    async def chat(req: ChatRequest, request: Request) -> dict[str, Any]:
        served = await models.get(req.model)
        async with turns.turn(request):
            result = await served.chat(
                from_wire_messages(req.messages),
                temperature=req.temperature,
                max_tokens=req.max_tokens,
                json_schema=req.json_schema,
                seed=req.seed,
                stop=req.stop,
            )
        return result_to_wire(result)

    @app.post("/v1/label_probs")
    async def label_probs(req: LabelRequest, request: Request) -> dict[str, Any]:
        served = await models.get(req.model)
        async with turns.turn(request):
            result = await served.label_probs(
                from_wire_prompt(req.prompt), req.labels, n_samples=req.n_samples
            )
        return result_to_wire(result)

    @app.post("/v1/label_probs_many")
    async def label_probs_many(req: LabelManyRequest, request: Request) -> list[dict[str, Any]]:
        prompts = [from_wire_prompt(p) for p in req.prompts]
        served = await models.get(req.model)
        async with turns.turn(request):
            if isinstance(served, BatchLabelProvider):
                results = await served.label_probs_many(
                    prompts, req.labels, n_samples=req.n_samples
                )
            else:
                results = [
                    await served.label_probs(p, req.labels, n_samples=req.n_samples)
                    for p in prompts
                ]
        return [result_to_wire(r) for r in results]

    @app.post("/v1/score")
    async def score(req: ScoreRequest, request: Request) -> dict[str, Any]:
        served = await models.get(req.model)
        async with turns.turn(request):
            result = await served.score_continuation(req.context, req.target)
        return result_to_wire(result)

    return app
