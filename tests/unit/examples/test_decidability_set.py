"""The decidability set loads, is big and balanced enough to measure a check, and pairs its items.

Too few undecidable criteria in one app, an item without its decidable twin on
the same response, or a malformed file would quietly weaken the measurement of
the v5 judge's `undecidable` abstention.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from pydantic import ValidationError

from bench.decidability import load_decidability
from reag.judging.prompt import Condition


def test_at_least_sixty_criteria_spread_over_both_apps_and_labels() -> None:
    items = load_decidability()
    assert len(items) >= 60
    counts = Counter((i.app, i.decidability) for i in items)
    for app in ("nutrition", "banking"):
        for label in ("decidable", "undecidable"):
            assert counts[app, label] >= 12, (app, label)
    assert all(Condition.of(i.criterion).polarity in {"pass", "fail"} for i in items)


def test_every_undecidable_item_has_a_decidable_twin_on_the_same_response() -> None:
    items = load_decidability()
    decidable = {(i.app, i.response) for i in items if i.decidability == "decidable"}
    lonely = [
        i.id
        for i in items
        if i.decidability == "undecidable" and (i.app, i.response) not in decidable
    ]
    assert lonely == []


def test_an_item_becomes_the_judge_request_a_live_criterion_makes() -> None:
    item = next(i for i in load_decidability() if i.query)
    request = item.request()
    assert request.criterion.text == item.criterion
    assert request.actual_response == item.response
    assert request.query == item.query
    assert (request.meta.case_id, request.meta.app) == (item.id, item.app)


def test_a_bad_label_or_a_repeated_id_is_refused(tmp_path: Path) -> None:
    row = (
        "- {id: a-1, app: banking, criterion: PASS if x., response: y, decidability: %s, why: z}\n"
    )
    head = "version: 1\nsource: t\nabout: t\ncriteria:\n"
    bad = tmp_path / "bad.yaml"
    bad.write_text(head + row % "maybe", encoding="utf-8")
    with pytest.raises(ValidationError):
        load_decidability(bad)
    twice = tmp_path / "twice.yaml"
    twice.write_text(head + row % "decidable" + row % "undecidable", encoding="utf-8")
    with pytest.raises(ValueError, match="repeat"):
        load_decidability(twice)
