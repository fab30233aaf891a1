"""The labelled case sets of ``python -m bench cases`` are valid and point at real documents.

A must-check address that is not in the app's corpus could never be cited, so every
coverage figure on its case would be wrong without anyone noticing; a case set with
almost no bad responses (or no good ones) cannot measure false PASS or false FAIL.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from pathlib import Path
from typing import get_args

import pytest
import yaml
from pydantic import ValidationError

from bench.case_sets import CASE_FILES, HELD_OUT, FailureKind, load_case_set
from reag.corpus.loader import load_sources
from reag.corpus.manifest import load_manifest

NEW_APPS = ("banking", "home-energy")


@cache
def addresses(app: str) -> frozenset[str]:
    manifest = load_manifest(CASE_FILES[app].parent / "app.yaml")
    assert manifest.name == app
    return frozenset(d.address for d in load_sources(manifest.corpus_paths(), manifest.name))


@pytest.mark.parametrize("app", list(CASE_FILES))
def test_every_must_check_address_is_a_document_of_the_app(app: str) -> None:
    case_set = load_case_set(CASE_FILES[app])
    assert case_set.app == app
    known = addresses(app)
    missing = {(c.id, a) for c in case_set.cases for a in c.must_check if a not in known}
    assert not missing


@pytest.mark.parametrize("app", NEW_APPS)
def test_new_apps_have_80_cases_about_half_bad_spread_over_every_kind(app: str) -> None:
    case_set = load_case_set(CASE_FILES[app])
    assert len(case_set.cases) >= 80
    assert 0.35 <= case_set.fail_share() <= 0.65
    kinds = Counter(c.kind for c in case_set.cases if c.kind)
    assert set(kinds) == set(get_args(FailureKind))
    assert min(kinds.values()) >= 3


def test_nutrition_cases_are_the_expert_labelled_pairs_failing_where_an_expert_said_no() -> None:
    rows = [
        json.loads(line)
        for line in (CASE_FILES["nutrition"].parent / "calibration.jsonl").read_text().splitlines()
    ]
    labels = {r["item_id"]: r["label"] for r in rows}
    case_set = load_case_set(CASE_FILES["nutrition"])
    assert sorted(i for c in case_set.cases for i in c.items) == sorted(labels)
    for case in case_set.cases:
        has_no = any(labels[i] == "NO" for i in case.items)
        assert case.expected == ("FAIL" if has_no else "PASS"), case.id
        assert case.must_check[0] == f"persona/{case.request.persona_hint}"


def test_the_new_domain_is_held_out_and_says_so() -> None:
    assert {"home-energy"} == HELD_OUT
    readme = (CASE_FILES["home-energy"].parent / "README.md").read_text()
    assert "held out" in readme.lower()


def test_a_fail_without_kind_or_a_pass_with_one_is_refused(tmp_path: Path) -> None:
    good = {
        "id": "x-1",
        "request": {"query": "q"},
        "response": "r",
        "expected": "FAIL",
        "must_check": ["requirement/FR-01"],
        "kind": "wrong_fact",
        "reason": "because",
    }
    path = tmp_path / "cases.yaml"
    for bad in (
        {**good, "kind": None},
        {**good, "expected": "PASS"},
        {**good, "kind": "rude"},
        {**good, "must_check": ["a/b", "a/b"]},
        {**good, "extra": 1},
    ):
        path.write_text(yaml.safe_dump({"app": "x", "cases": [bad]}))
        with pytest.raises(ValidationError):
            load_case_set(path)
    path.write_text(yaml.safe_dump({"app": "x", "cases": [good, good]}))
    with pytest.raises(ValidationError):
        load_case_set(path)
    path.write_text(yaml.safe_dump({"app": "x", "cases": [good]}))
    assert load_case_set(path).fail_share() == 1.0
