"""The sample app under test: its own system prompt, our LLM layer, an OpenAI-compatible API.

It is an ordinary consumer of ``reag.llm`` (whatever ``REAG_LLM_MODEL`` or the
manifest names), exposed as ``POST /v1/chat/completions`` so the elicitor's
OpenAI-compatible target adapter can probe it exactly as it would probe a
production app. Requests are answered one at a time per process by the
model's own concurrency limit; nothing here is reag's judgement of the
answer, it is the thing being judged.

Given a ``Recorder`` it also records its own traffic, as a production app
would with ``reag.client`` (``reag sample-app serve --record-to BOOTSTRAP``).
Off by default: in the demo the elicitor already publishes every probe, and a
second copy of each would be judged twice.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from reag.llm.base import LLMError, Message, PermanentLLMError
from reag.llm.client import LLMClient

if TYPE_CHECKING:
    from reag.client import Recorder


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "user", "assistant", "developer"]
    content: str


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str = ""
    messages: list[ChatMessage] = Field(min_length=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1, le=8192)
    seed: int | None = None
    user: str | None = Field(default=None, description="The caller's user id, if it sends one.")


def _error(status: int, message: str, kind: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind}}, status_code=status)


def create_sample_app(
    system_prompt: str,
    client: LLMClient,
    *,
    served_name: str = "sample-app",
    temperature: float = 0.3,
    max_tokens: int = 400,
    recorder: Recorder | None = None,
) -> FastAPI:
    """``system_prompt`` always comes first; a client's own system messages follow it.

    With ``recorder``, each answered request is recorded (and the recorder closed,
    flushing, when the server stops).
    """

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        if recorder is not None:
            await asyncio.to_thread(recorder.close)

    app = FastAPI(
        title=f"reag sample app ({served_name})", docs_url=None, redoc_url=None, lifespan=lifespan
    )

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok", "model": client.model}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {
            "object": "list",
            "data": [{"id": served_name, "object": "model", "owned_by": "reag"}],
        }

    @app.post("/v1/chat/completions", response_model=None)
    async def chat(request: ChatRequest) -> dict[str, Any] | JSONResponse:
        if not any(m.role == "user" for m in request.messages):
            return _error(
                400, "messages must contain at least one user message", "invalid_request_error"
            )
        messages = [Message("system", system_prompt)] + [
            Message("system" if m.role == "developer" else m.role, m.content)
            for m in request.messages
        ]
        started = time.perf_counter()
        try:
            result = await client.chat(
                messages,
                temperature=temperature if request.temperature is None else request.temperature,
                max_tokens=min(request.max_tokens or max_tokens, max_tokens),
                seed=request.seed,
            )
        except PermanentLLMError as exc:
            return _error(500, f"the sample app's model cannot answer: {exc}", "server_error")
        except LLMError as exc:
            return _error(503, f"the sample app's model is unavailable: {exc}", "server_error")
        usage = result.usage
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        if recorder is not None:
            recorder.record(
                query=next(m.content for m in reversed(request.messages) if m.role == "user"),
                response=result.text.strip(),
                user_id=request.user,
                request_id=completion_id,
                latency_s=time.perf_counter() - started,
            )
        return {
            "id": completion_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": served_name,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": result.text.strip()},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "total_tokens": usage.prompt_tokens + usage.completion_tokens,
            },
        }

    return app
