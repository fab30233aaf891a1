"""Scripted models the pipeline's real-broker tests share (FakeProvider scripts)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from reag.llm.base import Message


def reasoning_script(messages: Sequence[Message], options: dict[str, Any]) -> str:
    """Every document relevant; its first sentence cited word for word."""
    if options["json_schema"]["title"] == "ApplicationAnalysis":
        return json.dumps({"analysis": "The user needs advice that fits their condition."})
    body = re.search(
        r"<untrusted_document [^>]*>\n(.*?)\n</untrusted_document>", messages[-1].content, re.S
    )
    first = re.split(r"(?<=[.!?])\s", body.group(1).strip())[0] if body else ""
    return json.dumps(
        {
            "relevant": True,
            "reason": "it applies",
            "evidence": [{"sentence": first, "why": "it applies"}],
        }
    )
