"""A synthetic labelled set and a scripted judge whose confidence the test controls.

The scripted provider reads the case's response (the fenced response in the
last user turn of a chat prompt, or after the case heading of a raw-text one)
and answers from a marker in it, so the tests decide which items a tier is
sure about. Mechanics only: no model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from reag.judging.prompt import RESPONSE_TAG
from reag.llm.base import Message

_FENCED_RESPONSE = re.compile(rf"<{RESPONSE_TAG}>\n(.*?)\n</{RESPONSE_TAG}>", re.DOTALL)


def case_response(prompt: str | Sequence[Message]) -> str:
    if isinstance(prompt, str):
        text = prompt.partition("## Case under test")[2]
    else:
        text = [m for m in prompt if m.role == "user"][-1].content
    match = _FENCED_RESPONSE.search(text)
    assert match, "no fenced response in the judge prompt"
    return match.group(1)


def write_labelled(path: Path, n: int = 40, *, app: str = "nutrition") -> Path:
    """Items whose response says SURE-YES / SURE-NO (even ids) or UNSURE (odd ids).

    Labels agree with the SURE markers, so a judge reading them is right when confident.
    """
    personas = ("t2d", "ckd", "celiac", "pregnant")
    lines = []
    for i in range(n):
        label = "YES" if i % 4 in (0, 1) else "NO"
        marker = f"SURE-{label}" if i % 2 == 0 else "UNSURE"
        lines.append(
            json.dumps(
                {
                    "item_id": f"{app}-item-{i:03d}",
                    "app": app,
                    "persona_category": personas[i % 4],
                    "query": f"Is product {i} fine for me?",
                    "criterion": f"Criterion {i} holds.",
                    "actual_response": f"Answer {i}: {marker}.",
                    "label": label,
                    "explanation": f"because {i}",
                }
            )
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def marker_script(sure: float = 0.99, unsure: float = 0.6):  # type: ignore[no-untyped-def]
    """P(YES) from the case's marker: confident on SURE items, not on UNSURE ones."""

    def script(prompt: str | Sequence[Message], labels: Sequence[str]) -> dict[str, float]:
        response = case_response(prompt)
        if "SURE-YES" in response:
            p = sure
        elif "SURE-NO" in response:
            p = 1 - sure
        else:
            p = unsure
        return {"YES": p, "NO": 1 - p}

    return script
