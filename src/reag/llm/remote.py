"""A provider that forwards to a model server (``reag llm serve``) over HTTP.

Used for ``local:`` models when ``REAG_LLM_LOCAL_URL`` is set, so a service
loads no weights of its own. It raises the same error types the served
provider raised, and a server it cannot reach is a ``TransientLLMError``
(retried), since the server may be starting or restarting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import httpx

from reag.llm.base import (
    ChatResult,
    ConfigurationError,
    ContinuationScore,
    LabelProbs,
    LLMTimeoutError,
    Message,
    PermanentLLMError,
    TransientLLMError,
)
from reag.llm.wire import (
    ChatRequest,
    ErrorBody,
    LabelManyRequest,
    LabelRequest,
    ScoreRequest,
    chat_from_wire,
    error_from_wire,
    label_probs_from_wire,
    score_from_wire,
    to_wire_messages,
    to_wire_prompt,
)


class ModelServerProvider:
    """``Provider`` and ``BatchLabelProvider`` for a model served at ``base_url``."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        timeout_s: float,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._timeout_s = timeout_s
        self._transport = transport
        self._http: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _client(self) -> httpx.AsyncClient:
        # An httpx connection pool belongs to the loop that opened it.
        loop = asyncio.get_running_loop()
        if self._http is None or self._loop is not loop:
            self._http = httpx.AsyncClient(
                base_url=self.base_url, timeout=self._timeout_s, transport=self._transport
            )
            self._loop = loop
        return self._http

    async def _post(self, path: str, payload: dict[str, Any]) -> Any:
        try:
            response = await self._client().post(path, json=payload)
        except httpx.TimeoutException as exc:
            raise LLMTimeoutError(f"the model server at {self.base_url} timed out") from exc
        except httpx.TransportError as exc:
            raise TransientLLMError(
                f"cannot reach the model server at {self.base_url} (REAG_LLM_LOCAL_URL): {exc}; "
                "is `reag llm serve` running?"
            ) from exc
        if response.status_code >= 400:
            try:
                body = ErrorBody.model_validate(response.json())
            except ValueError:
                if response.status_code >= 500:
                    raise TransientLLMError(
                        f"the model server at {self.base_url} failed with HTTP "
                        f"{response.status_code}"
                    ) from None
                raise PermanentLLMError(
                    f"the model server at {self.base_url} rejected the request "
                    f"(HTTP {response.status_code}): {response.text[:300]}"
                ) from None
            raise error_from_wire(body, self.base_url)
        return response.json()

    def _check_model(self, served: str) -> None:
        if served != self.model:
            raise ConfigurationError(
                f"the model server at {self.base_url} serves {served}, not {self.model}; "
                "start it with --model or point REAG_LLM_LOCAL_URL elsewhere"
            )

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int = 512,
        json_schema: dict[str, Any] | None = None,
        seed: int | None = None,
        stop: Sequence[str] | None = None,
    ) -> ChatResult:
        request = ChatRequest(
            model=self.model,
            messages=to_wire_messages(messages),
            temperature=temperature,
            max_tokens=max_tokens,
            json_schema=json_schema,
            seed=seed,
            stop=list(stop) if stop else None,
        )
        result = chat_from_wire(await self._post("/v1/chat", request.model_dump()))
        self._check_model(result.model)
        return result

    async def label_probs(
        self,
        prompt: str | Sequence[Message],
        labels: Sequence[str],
        *,
        n_samples: int = 5,
    ) -> LabelProbs:
        request = LabelRequest(
            model=self.model,
            prompt=to_wire_prompt(prompt),
            labels=list(labels),
            n_samples=n_samples,
        )
        result = label_probs_from_wire(await self._post("/v1/label_probs", request.model_dump()))
        self._check_model(result.model)
        return result

    async def label_probs_many(
        self,
        prompts: Sequence[str | Sequence[Message]],
        labels: Sequence[str],
        *,
        n_samples: int = 5,
    ) -> list[LabelProbs]:
        request = LabelManyRequest(
            model=self.model,
            prompts=[to_wire_prompt(p) for p in prompts],
            labels=list(labels),
            n_samples=n_samples,
        )
        data = await self._post("/v1/label_probs_many", request.model_dump())
        results = [label_probs_from_wire(item) for item in data]
        for result in results:
            self._check_model(result.model)
        return results

    async def score_continuation(self, context: str, target: str) -> ContinuationScore:
        request = ScoreRequest(model=self.model, context=context, target=target)
        result = score_from_wire(await self._post("/v1/score", request.model_dump()))
        self._check_model(result.model)
        return result

    async def health(self) -> dict[str, str]:
        response = await self._client().get("/healthz")
        response.raise_for_status()
        data: dict[str, str] = response.json()
        return data

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None
