"""The alerts as code: promtool checks and unit-tests the rules file the chart ships.

``deploy/helm/reag/rules/reag-rules.yaml`` is the one copy: the chart wraps it
in a PrometheusRule, promtool reads it as it is, and docs/operations.md quotes
its expressions. Debian's ``prometheus`` package provides promtool; without it
these tests fail rather than skip, so unchecked rules never look green.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.deploy.promrules import (
    PENDING_SERIES,
    PROMTOOL_TESTS,
    RULES,
    alerts,
    load_rules,
    normalized,
    recordings,
    rules,
)
from tests.unit.deploy.test_dashboards import (
    OPERATIONS,
    assert_labels_exist,
    declared_series,
    metric_names,
)

Manifest = dict[str, Any]
Render = Callable[..., list[Manifest]]


@pytest.fixture(scope="module")
def promtool() -> Path:
    found = shutil.which("promtool")
    if found is None:
        pytest.fail(
            "promtool not found: install Debian's prometheus package (apt-get install "
            "prometheus); the alert rules are unchecked until then",
            pytrace=False,
        )
    return Path(found)


def run(promtool: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(promtool), *map(str, args)], capture_output=True, text=True, timeout=120, check=False
    )


def test_promtool_accepts_the_rules_file(promtool: Path) -> None:
    proc = run(promtool, "check", "rules", RULES)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"SUCCESS: {len(rules())} rules found" in proc.stdout


def test_promtool_unit_tests_pass(promtool: Path) -> None:
    # Run from the tests' folder: their rule_files path is relative to it.
    proc = subprocess.run(
        [str(promtool), "test", "rules", *(path.name for path in PROMTOOL_TESTS)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=PROMTOOL_TESTS[0].parent,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


def test_the_unit_tests_read_the_file_the_chart_ships() -> None:
    for tests in PROMTOOL_TESTS:
        (path,) = yaml.safe_load(tests.read_text())["rule_files"]
        assert (tests.parent / path).resolve() == RULES.resolve()


def test_every_alert_has_a_firing_and_a_silent_case() -> None:
    cases = [c for t in PROMTOOL_TESTS for c in yaml.safe_load(t.read_text())["tests"]]
    fires: set[str] = set()
    silent: set[str] = set()
    for case in cases:
        for check in case.get("alert_rule_test", []):
            (fires if check["exp_alerts"] else silent).add(check["alertname"])
    names = {rule["alert"] for rule in alerts()}
    assert names <= fires, f"no case where these fire: {sorted(names - fires)}"
    assert names <= silent, f"no case where these stay silent: {sorted(names - silent)}"
    assert (fires | silent) <= names, "a case tests an alert the rules do not have"


def test_alerts_and_records_are_named_and_labelled_consistently() -> None:
    names = [rule["alert"] for rule in alerts()]
    assert len(names) == len(set(names))
    for rule in alerts():
        assert re.fullmatch(r"Reag[A-Z][A-Za-z]+", rule["alert"]), rule["alert"]
        assert rule["labels"]["severity"] in {"critical", "warning"}, rule["alert"]
        assert {"summary", "description"} <= set(rule["annotations"]), rule["alert"]
    for rule in recordings():
        # Prometheus' convention: level:metric:operations.
        assert re.fullmatch(r"([a-z_]+:)?reag_[a-z_]+:[a-z0-9_]+", rule["record"]), rule["record"]


def test_every_recording_rule_is_read_by_an_alert() -> None:
    used = set().union(*(metric_names(rule["expr"]) for rule in alerts()))
    for rule in recordings():
        assert rule["record"] in used, f"{rule['record']} is recorded but nothing reads it"


def test_rules_query_only_series_that_exist() -> None:
    recorded = {rule["record"]: frozenset[str]() for rule in recordings()}
    series = PENDING_SERIES | declared_series() | recorded
    for rule in rules():
        names = metric_names(rule["expr"])
        assert names, rule
        unknown = names - set(series)
        assert not unknown, (rule.get("alert") or rule.get("record"), unknown)
        assert_labels_exist(rule["expr"], series)


@pytest.mark.slow
def test_the_chart_ships_the_rules_file_as_is(render: Render) -> None:
    manifests = render("serviceMonitor.enabled=true", "prometheusRule.labels.release=kps")
    (rule,) = [m for m in manifests if m["kind"] == "PrometheusRule"]
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["metadata"]["labels"]["release"] == "kps"
    assert rule["spec"] == load_rules()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sets", "shipped"),
    [
        ((), False),
        (("serviceMonitor.enabled=true",), True),
        (("prometheusRule.enabled=true",), True),
        (("serviceMonitor.enabled=true", "prometheusRule.enabled=false"), False),
    ],
)
def test_the_rule_follows_the_service_monitor_unless_told_otherwise(
    render: Render, sets: tuple[str, ...], shipped: bool
) -> None:
    kinds = [m["kind"] for m in render(*sets)]
    assert kinds.count("PrometheusRule") == int(shipped)


def alerts_section() -> str:
    text = OPERATIONS.read_text()
    return text[text.index("## Alerts worth having") : text.index("## When a panel is empty")]


def test_the_operations_guide_names_every_alert_and_quotes_its_expression() -> None:
    section = alerts_section()
    blocks = {normalized(b) for b in re.findall(r"```promql\n(.*?)```", section, re.DOTALL)}
    exprs = {normalized(rule["expr"]) for rule in rules()}
    assert blocks <= exprs, f"the guide shows queries the rules do not have: {blocks - exprs}"
    for rule in alerts():
        assert f"**{rule['alert']}**" in section, rule["alert"]
        assert normalized(rule["expr"]) in blocks, rule["alert"]
    assert "deploy/helm/reag/rules/reag-rules.yaml" in section
