"""Record an OpenAI client's chat completions without touching the app's code paths.

``wrap_openai(client, recorder)`` patches ``client.chat.completions.create`` on
that one client object (sync ``OpenAI`` or ``AsyncOpenAI``): the call goes
through unchanged, its result is returned as it came, and afterwards the last
user message and the first choice's content are recorded. Recording is
best-effort: whatever goes wrong in it is counted as failed and the call's
result is still returned. Streaming calls (``stream=True``) pass through
unrecorded, since their text exists only once the app has consumed the stream.
``client.with_options(...)`` makes a new client, which is not wrapped.
"""

from __future__ import annotations

import functools
import inspect
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from reag.client.recorder import Recorder

log = logging.getLogger("reag.client")

C = TypeVar("C")
UserIdOf = Callable[[Mapping[str, Any]], str | None]


def _text(content: Any) -> str:
    """A message's content as text: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return ""


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)


def last_user_message(messages: Any) -> str:
    for message in reversed(list(messages or ())):
        if _field(message, "role") == "user":
            return _text(_field(message, "content"))
    return ""


def first_choice_text(result: Any) -> str | None:
    """The first choice's message content, or None when ``result`` is no chat completion."""
    choices = getattr(result, "choices", None)
    if not choices:
        return None
    message = getattr(choices[0], "message", None)
    content = getattr(message, "content", None)
    return content if isinstance(content, str) else None


def wrap_openai(
    client: C,
    recorder: Recorder,
    *,
    profile: Mapping[str, object] | None = None,
    user_id: str | UserIdOf | None = None,
    app: str | None = None,
    persona_hint: str = "",
) -> C:
    """``client`` with its chat completions recorded; returns the same object.

    ``user_id`` is a fixed id or a function of the call's keyword arguments; when
    unset, the call's own ``user`` or ``safety_identifier`` argument is used. The
    completion's id becomes the request id, so a case is tied to the call.
    """
    completions: Any = client.chat.completions  # type: ignore[attr-defined]
    original = completions.create
    if getattr(original, "__reag_recorded__", False):
        return client  # already wrapped: recording twice would double every case

    def user_of(kwargs: Mapping[str, Any]) -> str | None:
        if callable(user_id):
            return user_id(kwargs)
        if user_id is not None:
            return user_id
        for name in ("user", "safety_identifier"):
            value = kwargs.get(name)
            if isinstance(value, str) and value:
                return value
        return None

    def after(kwargs: Mapping[str, Any], result: Any, started: float) -> None:
        try:
            if kwargs.get("stream"):
                return
            response = first_choice_text(result)
            if response is None:
                return
            recorder.record(
                query=last_user_message(kwargs.get("messages")),
                response=response,
                profile=profile,
                app=app,
                user_id=user_of(kwargs),
                request_id=getattr(result, "id", None) or None,
                latency_s=time.perf_counter() - started,
                persona_hint=persona_hint,
            )
        except Exception:  # noqa: BLE001 - the app's call must not fail because of reag
            recorder._failed(
                app or recorder.app, "wrap", "reag recorder: recording an OpenAI call failed"
            )

    @functools.wraps(original)
    def create(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        result = original(*args, **kwargs)
        if inspect.isawaitable(result):

            async def awaited() -> Any:
                value = await result
                after(kwargs, value, started)
                return value

            return awaited()
        after(kwargs, result, started)
        return result

    create.__reag_recorded__ = True  # type: ignore[attr-defined]
    completions.create = create
    return client
