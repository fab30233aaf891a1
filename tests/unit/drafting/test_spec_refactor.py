from __future__ import annotations

import json
from typing import Any

from reag.drafting.document import SrsDocument
from reag.drafting.refactor import Refactor, cut_at_line
from reag.drafting.settings import SpecSettings
from reag.drafting.template import load_template


def draft() -> SrsDocument:
    template = load_template("ieee830")
    document = SrsDocument(template, "x")
    for leaf in template.leaves():
        document.set_text(leaf.number, f"The system shall cover {leaf.title.lower()}.")
    return document


def test_cut_at_line_keeps_whole_lines_and_says_what_is_missing() -> None:
    text = "line one\nline two\nline three"
    assert cut_at_line(text, 100) == text
    cut = cut_at_line(text, 12)
    assert cut.startswith("line one\n[... draft cut here: ")
    assert cut.endswith(f"{len(text) - len('line one')} more characters not shown]")


async def test_review_sees_a_bounded_draft_and_returns_commands(fakes: Any) -> None:
    reply = {
        "commands": [
            {
                "section": "3.3",
                "quality": "verifiability",
                "finding": "no number",
                "command": "Give the response time in seconds.",
            },
            {"section": "1.1", "quality": "ambiguity", "finding": "", "command": "  "},
        ]
    }
    client, provider = fakes.client(json.dumps(reply))
    refactor = Refactor(client, SpecSettings().refactor, max_draft_chars=300)
    commands = await refactor.review(draft(), ["2.6 is not specified"], [])
    assert [c.section for c in commands] == ["3.3"]  # a blank command is dropped
    prompt = fakes.user_text(provider.calls[0].payload)
    assert "[... draft cut here:" in prompt
    assert (
        "<untrusted_verification_comments>\n- 2.6 is not specified\n"
        "</untrusted_verification_comments>" in prompt
    )
    assert "<untrusted_reviewer_feedback>" not in prompt
    assert provider.calls[0].options["temperature"] == 0.2
