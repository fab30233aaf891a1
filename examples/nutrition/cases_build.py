"""Derive ``cases.yaml`` (the case set of ``python -m bench cases``) from ``calibration.jsonl``.

Run once, ``python examples/nutrition/cases_build.py``; the output is committed. A case
is one (query, response) pair of the expert-labelled items; it is expected to FAIL
when an expert labelled any of its criteria NO (issue 24). The must-check documents
are assigned by a fixed rule written before any reag stage ran on the cases: the
persona document of the user's category, the domain knowledge of that category, and
the requirements and knowledge that the case's criteria talk about (keyword rules
below). The failure kind of a FAIL is read off its first NO criterion by keyword rules
too, and its reason is that criterion with the expert's explanation.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent

PERSONA_KNOWLEDGE = {
    "t2d-hypertension": ["domain_knowledge/DK-04", "domain_knowledge/DK-05"],
    "ckd": ["domain_knowledge/DK-06"],
    "pregnancy": ["domain_knowledge/DK-08", "domain_knowledge/DK-09"],
    "athlete": ["domain_knowledge/DK-10"],
    "weight-management": ["domain_knowledge/DK-11"],
    "elderly": ["domain_knowledge/DK-12"],
    "post-surgery": ["domain_knowledge/DK-13"],
    "celiac": ["domain_knowledge/DK-14", "requirement/FR-15"],
    "food-allergy": ["domain_knowledge/DK-15", "requirement/FR-14"],
    "vegan": ["domain_knowledge/DK-16"],
    "emotional-eater": ["domain_knowledge/DK-18"],
    "night-shift-worker": ["domain_knowledge/DK-17"],
}

# (pattern over a criterion, documents it makes a reviewer check)
TOPICS: list[tuple[str, list[str]]] = [
    (r"sugar", ["requirement/FR-07"]),
    (r"salt|sodium", ["requirement/FR-08"]),
    (r"saturat|\bfat\b", ["requirement/FR-09"]),
    (r"score|sub-score|badge|band", ["requirement/FR-10"]),
    (r"persona fit", ["requirement/FR-11"]),
    (
        r"portion|serving|per bar|per pot|per bag|teaspoon|tablespoon|amount used",
        ["requirement/FR-13"],
    ),
    (r"allerg|may contain|lysozyme|caseinate", ["requirement/FR-14", "domain_knowledge/DK-15"]),
    (r"gluten|wheat|barley", ["requirement/FR-15", "domain_knowledge/DK-14"]),
    (
        r"potassium chloride|salt substitute|dumping|renal team|dietitian|checking with",
        ["requirement/FR-16"],
    ),
    (r"disclaimer", ["requirement/FR-17"]),
    (r"language|chinese|spanish", ["requirement/FR-19"]),
    (r"simple mode", ["requirement/FR-20"]),
    (r"retake|barcode|could not be read|not declared", ["requirement/FR-05"]),
    (r"phosph|potassium", ["domain_knowledge/DK-07"]),
    (r"blaming|moralising|restrictive|judg", ["domain_knowledge/DK-18"]),
]

KINDS: list[tuple[str, str]] = [
    (
        r"allerg|peanut|milk|egg|gluten|coeliac|celiac|salt substitute|dumping|tuna|renal"
        r"|coconut water freely|caffeine limit",
        "safety_escalation_missed",
    ),
    (
        r"chinese|language|simple mode|score card|sub-scores|disclaimer|runs well beyond",
        "wrong_language_or_format",
    ),
    (
        r"user's|blaming|moralising|restrictive|weight-loss framing|older user|non-food"
        r"|reliable b12|iodine|drinking with meals|night",
        "wrong_persona",
    ),
]


def split_query(query: str) -> tuple[str, str, str | None]:
    """The user's words, the profile summary and the label text of a calibration query."""
    words = query.split(" [", 1)[0].strip()
    profile = re.search(r"\[Profile: (.*?)\]", query)
    label = re.search(r"\[Label: (.*)\]\s*$", query)
    return words, profile.group(1) if profile else "", label.group(1) if label else None


def topics(criteria: list[str]) -> list[str]:
    found: list[str] = []
    for criterion in criteria:
        for pattern, docs in TOPICS:
            if re.search(pattern, criterion, re.IGNORECASE):
                found += [d for d in docs if d not in found]
    return found


def kind_of(criterion: str) -> str:
    for pattern, kind in KINDS:
        if re.search(pattern, criterion, re.IGNORECASE):
            return kind
    return "wrong_fact"


def build() -> dict[str, object]:
    rows = [
        json.loads(line) for line in (HERE / "calibration.jsonl").read_text().splitlines() if line
    ]
    groups: dict[tuple[str, str], list[dict[str, str]]] = {}
    for row in rows:
        groups.setdefault((row["query"], row["actual_response"]), []).append(row)
    cases = []
    for n, ((query, response), items) in enumerate(groups.items(), start=1):
        category = items[0]["persona_category"]
        words, profile, label = split_query(query)
        must = [f"persona/{category}", *PERSONA_KNOWLEDGE[category]]
        must += [d for d in topics([i["criterion"] for i in items]) if d not in must]
        noes = [i for i in items if i["label"] == "NO"]
        case: dict[str, object] = {
            "id": f"nu-{n:03d}",
            "request": {
                "query": words,
                "persona_hint": category,
                "profile": profile,
                "context": label,
            },
            "response": response,
            "expected": "FAIL" if noes else "PASS",
            "must_check": must,
            "items": [i["item_id"] for i in items],
        }
        if noes:
            first = noes[0]
            case["kind"] = kind_of(first["criterion"])
            case["reason"] = f"{first['criterion']} Expert: {first['explanation']}".replace(
                "\n", " "
            )
        cases.append(case)
    return {"app": "nutrition", "cases": cases}


HEADER = """\
# Labelled cases of NutriLens for `python -m bench cases` (issue 24; see docs/cases.md).
# Generated by cases_build.py from calibration.jsonl (do not edit by hand): one case per
# (query, response) pair of the 233 expert-labelled items, expected FAIL where an expert
# labelled any criterion NO; `items` are its calibration item ids (for cross-fitting).
"""


def main() -> None:
    text = yaml.safe_dump(build(), sort_keys=False, allow_unicode=True, width=100)
    (HERE / "cases.yaml").write_text(HEADER + text, encoding="utf-8")


if __name__ == "__main__":
    main()
