"""One ``LLMClient`` per distinct model for the agents of a run, from the LLM registry."""

from __future__ import annotations

from collections.abc import Callable

from reag.llm.client import Caller, LLMClient

MakeClient = Callable[[str | None], LLMClient]


class ClientPool:
    """Agents that name the same model share one client (and, locally, one loaded model).

    ``make`` defaults to ``reag.llm.registry.make_client`` with the caller
    ``Caller(service="spec")``; tests pass a function that returns fake clients.
    """

    def __init__(self, make: MakeClient | None = None) -> None:
        self._make = make or _registry_client
        self._clients: dict[str | None, LLMClient] = {}

    async def get(self, model: str | None) -> LLMClient:
        client = self._clients.get(model)
        if client is None:
            made = self._make(model)
            # An unset model and the default model's own name are the same model.
            client = self._clients.setdefault(made.model, made)
            if client is not made:
                await made.aclose()
            self._clients[model] = client
        return client

    async def aclose(self) -> None:
        for client in {id(c): c for c in self._clients.values()}.values():
            await client.aclose()
        self._clients.clear()


def _registry_client(model: str | None) -> LLMClient:
    from reag.llm.registry import make_client

    return make_client(model, caller=Caller(service="spec"))
