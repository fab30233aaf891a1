"""Target adapters: how a simulated user's request reaches the LLM app under test.

Two kinds, configured per app in its manifest (``reag.apps``): an
OpenAI-compatible chat endpoint (the openai SDK with ``base_url``) and a plain
HTTP JSON endpoint (httpx, a request template and a response path). Both time
the call, so the traffic they produce carries the app's real response latency.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import httpx
from openai.types.chat import ChatCompletionMessageParam

from reag.apps import TEMPLATE_FIELDS, HttpJsonTarget, OpenAITarget
from reag.v1 import events_pb2 as pb


class TargetError(RuntimeError):
    """The app under test gave no usable answer; the message says which endpoint and why."""


@dataclass(frozen=True, slots=True)
class TargetRequest:
    query: str
    profile: pb.UserProfile
    context: str = ""
    context_title: str = "attachment"

    def fields(self) -> dict[str, str]:
        """The values a template may name (``reag.apps.TEMPLATE_FIELDS``)."""
        query_with_context = self.query
        if self.context.strip():
            query_with_context = f"{self.query}\n\n[{self.context_title}]\n{self.context.strip()}"
        return {
            "query": self.query,
            "context": self.context,
            "query_with_context": query_with_context,
            "profile": render_profile(self.profile),
            "persona_hint": self.profile.persona_hint,
            "user_id": self.profile.user_id,
        }


@dataclass(frozen=True, slots=True)
class TargetReply:
    text: str
    latency_s: float
    endpoint: str


class Target(Protocol):
    endpoint: str

    async def ask(self, request: TargetRequest) -> TargetReply: ...

    async def aclose(self) -> None: ...


def render_profile(profile: pb.UserProfile) -> str:
    lines = [profile.description.strip()] if profile.description.strip() else []
    lines += [f"{k}: {v}" for k, v in sorted(profile.attributes.items()) if v]
    return "\n".join(lines) or "(no profile given)"


def profile_json(profile: pb.UserProfile) -> dict[str, Any]:
    return {
        "user_id": profile.user_id,
        "persona_hint": profile.persona_hint,
        "description": profile.description,
        "attributes": dict(profile.attributes),
    }


_PLACEHOLDER = re.compile(r"\{(" + "|".join(TEMPLATE_FIELDS) + r")\}")


def fill(template: str, request: TargetRequest) -> str:
    """Replace ``{field}`` for the known fields only, so other braces (JSON) stay as written."""
    fields = request.fields()
    return _PLACEHOLDER.sub(lambda m: fields[m.group(1)], template)


def render(template: Any, request: TargetRequest) -> Any:
    """Fill a JSON request template: ``"$profile_json"`` → object, ``{field}`` → text."""
    if isinstance(template, str):
        if template == "$profile_json":
            return profile_json(request.profile)
        return fill(template, request)
    if isinstance(template, Mapping):
        return {key: render(value, request) for key, value in template.items()}
    if isinstance(template, list):
        return [render(value, request) for value in template]
    return template


def extract(payload: Any, path: str) -> str:
    """The text at ``path`` (``"choices.0.message.content"``) of a JSON reply.

    ``TargetError`` names the step of the path that found nothing.
    """
    node = payload
    for step in (s for s in path.split(".") if s):
        if (
            isinstance(node, list)
            and step.lstrip("-").isdigit()
            and -len(node) <= int(step) < len(node)
        ):
            node = node[int(step)]
        elif isinstance(node, Mapping) and step in node:
            node = node[step]
        else:
            raise TargetError(
                f"the reply has nothing at {step!r} of response_path {path!r} "
                f"(found {type(node).__name__}); fix target.response_path in the manifest"
            )
    if not isinstance(node, str):
        raise TargetError(f"response_path {path!r} points at a {type(node).__name__}, not text")
    return node


class OpenAICompatibleTarget:
    def __init__(self, config: OpenAITarget, *, client: Any | None = None) -> None:
        from openai import AsyncOpenAI

        self.config = config
        self.endpoint = f"openai:{config.base_url.rstrip('/')}/chat/completions#{config.model}"
        key = os.environ.get(config.api_key_env, "") if config.api_key_env else ""
        self._client = client or AsyncOpenAI(
            base_url=config.base_url,
            api_key=key or "not-needed",
            timeout=config.timeout_s,
            max_retries=1,
        )

    def messages(self, request: TargetRequest) -> list[ChatCompletionMessageParam]:
        out: list[ChatCompletionMessageParam] = []
        if self.config.system_template:
            out.append({"role": "system", "content": fill(self.config.system_template, request)})
        out.append({"role": "user", "content": fill(self.config.user_template, request)})
        return out

    async def ask(self, request: TargetRequest) -> TargetReply:
        import openai

        options: dict[str, Any] = {}
        if self.config.temperature is not None:
            options["temperature"] = self.config.temperature
        if self.config.max_tokens is not None:
            options["max_tokens"] = self.config.max_tokens
        started = time.perf_counter()
        try:
            completion = await self._client.chat.completions.create(
                model=self.config.model, messages=self.messages(request), **options
            )
        except openai.OpenAIError as exc:
            raise TargetError(f"{self.endpoint} failed: {type(exc).__name__}: {exc}") from exc
        latency = time.perf_counter() - started
        if not completion.choices or not completion.choices[0].message.content:
            raise TargetError(f"{self.endpoint} answered with no message content")
        return TargetReply(completion.choices[0].message.content, latency, self.endpoint)

    async def aclose(self) -> None:
        await self._client.close()


class HttpJsonTargetAdapter:
    def __init__(self, config: HttpJsonTarget, *, client: httpx.AsyncClient | None = None) -> None:
        self.config = config
        self.endpoint = f"http:{config.method} {config.url}"
        headers = dict(config.headers)
        for name, variable in config.headers_from_env.items():
            value = os.environ.get(variable)
            if value is None:
                raise TargetError(
                    f"header {name!r} of {config.url} needs the environment variable {variable}"
                )
            headers[name] = value
        self._client = client or httpx.AsyncClient(timeout=config.timeout_s)
        self._headers = headers

    async def ask(self, request: TargetRequest) -> TargetReply:
        body = render(self.config.request_template, request)
        started = time.perf_counter()
        try:
            response = await self._client.request(
                self.config.method, self.config.url, json=body, headers=self._headers
            )
        except httpx.HTTPError as exc:
            raise TargetError(f"{self.endpoint} failed: {type(exc).__name__}: {exc}") from exc
        latency = time.perf_counter() - started
        if response.status_code >= 400:
            raise TargetError(
                f"{self.endpoint} answered HTTP {response.status_code}: {response.text[:200]}"
            )
        try:
            payload = response.json()
        except json.JSONDecodeError as exc:
            raise TargetError(f"{self.endpoint} answered with something that is not JSON") from exc
        return TargetReply(extract(payload, self.config.response_path), latency, self.endpoint)

    async def aclose(self) -> None:
        await self._client.aclose()


def make_target(config: OpenAITarget | HttpJsonTarget) -> Target:
    if isinstance(config, OpenAITarget):
        return OpenAICompatibleTarget(config)
    return HttpJsonTargetAdapter(config)
