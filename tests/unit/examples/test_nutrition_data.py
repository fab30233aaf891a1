"""The NutriLens example data parses with plain yaml/json/csv and is internally consistent.

These files are read by the corpus loader, the elicitor, the calibrator and the
retrieval benchmark; a broken address, a duplicate id or a persona missing from
the calibration set would silently skew those stages, so the checks here do
not go through reag's own loaders.
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3] / "examples" / "nutrition"
MARKDOWN_KINDS = {
    "corpus/requirements.md": ("requirement", "FR-"),
    "corpus/user_stories.md": ("user_story", "US-"),
    "corpus/domain_knowledge.md": ("domain_knowledge", "DK-"),
    "corpus/background.md": ("background", "BG-"),
}
REQUIRED_PERSONAS = {
    "t2d-hypertension",
    "ckd",
    "pregnancy",
    "athlete",
    "weight-management",
    "elderly",
    "post-surgery",
}
CALIBRATION_FIELDS = {
    "item_id",
    "app",
    "persona_category",
    "query",
    "criterion",
    "actual_response",
    "label",
    "explanation",
}


def _yaml(name: str) -> Any:
    return yaml.safe_load((ROOT / name).read_text(encoding="utf-8"))


def _split_markdown(text: str) -> tuple[dict[str, Any], list[tuple[str, str, str]]]:
    """Front matter, then (id, title, body) per level-2 heading."""
    match = re.match(r"^---\n(.*?)\n---\n(.*)$", text, flags=re.S)
    assert match, "a corpus Markdown file starts with YAML front matter between --- lines"
    front = yaml.safe_load(match.group(1))
    docs = []
    for chunk in re.split(r"^## ", match.group(2), flags=re.M)[1:]:
        heading, _, body = chunk.partition("\n")
        doc_id, _, title = heading.strip().partition(" ")
        docs.append((doc_id, title.strip(), body.strip()))
    return front, docs


@cache
def corpus() -> dict[str, str]:
    """Every corpus document, address -> text."""
    docs: dict[str, str] = {}

    def add(address: str, text: str) -> None:
        assert address not in docs, f"duplicate document address {address}"
        docs[address] = text

    for name, (kind, _) in MARKDOWN_KINDS.items():
        _, parsed = _split_markdown((ROOT / name).read_text(encoding="utf-8"))
        for doc_id, _, body in parsed:
            add(f"{kind}/{doc_id}", body)
    for persona in _yaml("corpus/personas.yaml")["documents"]:
        add(f"persona/{persona['id']}", persona["content"])
    with (ROOT / "corpus/nfr.csv").open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            add(f"nfr/{row['subsection'].split()[0]}", row["content"])
    return docs


@cache
def persona_ids() -> set[str]:
    return {p["id"] for p in _yaml("corpus/personas.yaml")["documents"]}


@cache
def calibration() -> list[dict[str, Any]]:
    lines = (ROOT / "calibration.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_manifest_names_existing_files() -> None:
    manifest = _yaml("app.yaml")
    assert manifest["name"] == "nutrition"
    assert "illustrative" in manifest["title"].lower()
    named = [*manifest["corpus"], manifest["seed_queries"], manifest["calibration"]]
    named.append(manifest["sample_app"]["system_prompt"])
    for relative in named:
        assert (ROOT / relative).is_file(), relative
    assert set(MARKDOWN_KINDS) <= set(manifest["corpus"])


@pytest.mark.parametrize("name", sorted(MARKDOWN_KINDS))
def test_markdown_corpus_has_kind_and_prefixed_ids(name: str) -> None:
    kind, prefix = MARKDOWN_KINDS[name]
    front, docs = _split_markdown((ROOT / name).read_text(encoding="utf-8"))
    assert front["kind"] == kind
    assert docs, f"{name} has no level-2 headings"
    for doc_id, title, _ in docs:
        assert re.fullmatch(re.escape(prefix) + r"\d{2}", doc_id), doc_id
        assert title, f"{doc_id} has no title"


def test_documents_are_40_to_200_words() -> None:
    lengths = {address: len(text.split()) for address, text in corpus().items()}
    outside = {a: n for a, n in lengths.items() if not 40 <= n <= 200}
    assert not outside


def test_corpus_sizes() -> None:
    kinds = Counter(address.split("/")[0] for address in corpus())
    assert kinds["requirement"] >= 18
    assert kinds["user_story"] >= 10
    assert kinds["domain_knowledge"] >= 15
    assert kinds["background"] >= 5
    assert kinds["nfr"] >= 10
    assert kinds["persona"] >= 10


def test_personas_have_profile_keywords() -> None:
    data = _yaml("corpus/personas.yaml")
    assert data["kind"] == "persona"
    ids = [p["id"] for p in data["documents"]]
    assert len(ids) == len(set(ids))
    assert set(ids) >= REQUIRED_PERSONAS
    for persona in data["documents"]:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", persona["id"]), persona["id"]
        assert persona["title"]
        assert persona["metadata"]["keywords"], persona["id"]
        assert isinstance(persona["metadata"]["conditions"], list)


def test_nfr_csv_shape() -> None:
    with (ROOT / "corpus/nfr.csv").open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == ["section", "subsection", "content"]
        rows = list(reader)
    for row in rows:
        assert re.match(r"NFR-\d{2} \S", row["subsection"]), row["subsection"]
        assert row["section"]


def test_queries() -> None:
    queries = _yaml("queries.yaml")["queries"]
    assert len(queries) >= 30
    assert len({q["id"] for q in queries}) == len(queries)
    for query in queries:
        assert query["text"].strip()
        if "persona_hint" in query:
            assert query["persona_hint"] in persona_ids(), query["id"]
    assert sum("product" in q for q in queries) >= 25


def _grams(line: str, nutrient: str) -> float:
    match = re.search(rf"\b{nutrient} (\d+(?:\.\d+)?) g", line)
    return float(match.group(1)) if match else 0.0


def test_query_labels_pass_the_apps_own_energy_cross_check() -> None:
    """FR-04: declared energy within 15% of the macronutrients, kJ = 4.184 x kcal."""
    checked = 0
    for query in _yaml("queries.yaml")["queries"]:
        line = next(
            (x for x in query.get("product", "").splitlines() if x.startswith("Nutrition per")),
            "",
        )
        energy = re.search(r"energy (\d+) kJ / (\d+) kcal", line)
        if not energy or "[unreadable]" in line:
            continue
        kj, kcal = int(energy.group(1)), int(energy.group(2))
        assert abs(kj - 4.184 * kcal) <= 1, query["id"]
        if kcal == 0:
            continue
        polyols = _grams(line, "polyols")
        computed = (
            4 * (_grams(line, "carbohydrate") - polyols)
            + 2.4 * polyols
            + 4 * _grams(line, "protein")
            + 9 * _grams(line, "fat")
            + 2 * _grams(line, "fibre")
        )
        assert abs(computed - kcal) / kcal <= 0.15, (query["id"], computed, kcal)
        checked += 1
    assert checked >= 25


def test_calibration_records() -> None:
    items = calibration()
    assert len(items) >= 150
    assert len({i["item_id"] for i in items}) == len(items)
    for item in items:
        assert set(item) == CALIBRATION_FIELDS, item["item_id"]
        assert item["app"] == "nutrition"
        assert item["label"] in {"YES", "NO"}
        assert item["persona_category"] in persona_ids(), item["item_id"]
        assert item["criterion"].startswith(("PASS if", "FAIL if")), item["item_id"]
        for key in ("query", "actual_response", "explanation"):
            assert item[key].strip(), (item["item_id"], key)


def test_calibration_label_balance() -> None:
    items = calibration()
    labels = Counter(i["label"] for i in items)
    assert 0.35 <= labels["NO"] / len(items) <= 0.55
    per_persona = Counter(i["persona_category"] for i in items)
    assert set(per_persona) == persona_ids()
    assert min(per_persona.values()) >= 8
    for persona in persona_ids():
        persona_labels = {i["label"] for i in items if i["persona_category"] == persona}
        assert persona_labels == {"YES", "NO"}, persona


def test_calibration_labels_not_given_away_by_criterion_form() -> None:
    """Both labels occur for PASS-if and FAIL-if criteria, and for one response."""
    items = calibration()
    for form in ("PASS if", "FAIL if"):
        labels = Counter(i["label"] for i in items if i["criterion"].startswith(form))
        assert min(labels["YES"], labels["NO"]) >= 0.25 * sum(labels.values()), form
    by_response: dict[str, set[str]] = {}
    for item in items:
        by_response.setdefault(item["actual_response"], set()).add(item["label"])
    mixed = sum(labels == {"YES", "NO"} for labels in by_response.values())
    assert mixed >= len(by_response) // 2


def test_retrieval_bench_addresses_exist() -> None:
    intentions = _yaml("retrieval_bench.yaml")["intentions"]
    assert len(intentions) >= 40
    assert len({i["id"] for i in intentions}) == len(intentions)
    known = corpus()
    for intention in intentions:
        assert intention["query"].strip()
        assert intention["situation"].strip()
        assert intention["persona_category"] in persona_ids(), intention["id"]
        relevant = intention["relevant"]
        assert 2 <= len(relevant) <= 6, intention["id"]
        assert len(set(relevant)) == len(relevant), intention["id"]
        missing = [a for a in relevant if a not in known]
        assert not missing, (intention["id"], missing)


def test_brief_length_and_illustrative_notice() -> None:
    brief_words = len((ROOT / "brief.md").read_text(encoding="utf-8").split())
    assert 150 <= brief_words <= 320
    readme = (ROOT / "README.md").read_text(encoding="utf-8").lower()
    assert "illustrative" in readme
    assert "not medical advice" in readme
    assert (ROOT / "sample_app/system_prompt.md").read_text(encoding="utf-8").strip()
