"""reag's Prometheus rules file, read the way the chart and promtool read it.

``PENDING_SERIES`` names the gauges other parts of reag are adding while these
rules are written (stuck cases, the live trust monitor), with the labels the
rules expect of them; where ``reag.metrics`` declares one, its declaration wins.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[3]
RULES = REPO / "deploy" / "helm" / "reag" / "rules" / "reag-rules.yaml"
# Two files for two evaluation intervals (a week of data is evaluated hourly).
PROMTOOL_TESTS = tuple(
    Path(__file__).resolve().parent / "promtool" / name
    for name in ("reag-rules.test.yaml", "reag-rules-weekly.test.yaml")
)

PENDING_SERIES: dict[str, frozenset[str]] = {
    "reag_cases_stuck": frozenset({"app"}),
    "reag_trust_risk_bound": frozenset({"app", "tier"}),
    "reag_trust_alpha": frozenset({"app", "tier"}),
    "reag_trust_insufficient": frozenset({"app", "tier"}),
    "reag_trust_drift_alarm": frozenset({"app", "tier", "kind"}),
}

Rule = dict[str, Any]


def load_rules() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(RULES.read_text())
    return loaded


def rules() -> list[Rule]:
    return [rule for group in load_rules()["groups"] for rule in group["rules"]]


def alerts() -> list[Rule]:
    return [rule for rule in rules() if "alert" in rule]


def recordings() -> list[Rule]:
    return [rule for rule in rules() if "record" in rule]


def normalized(expr: str) -> str:
    """One space wherever the expression has any whitespace: layout is not meaning."""
    return " ".join(expr.split())
