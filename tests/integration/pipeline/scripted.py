"""Scripted models the pipeline's real-broker tests share (FakeProvider scripts)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reag.llm.base import Message
from reag.llm.scripted import ScriptedModel

_SCRIPTS = ScriptedModel("pipeline")


def reasoning_script(messages: Sequence[Message], options: dict[str, Any]) -> str:
    """Every document relevant; its first sentence cited word for word (the load runs'
    scripted model, ``reag.llm.scripted``)."""
    return _SCRIPTS.chat(messages, options)
