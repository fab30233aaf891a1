"""The Grafana dashboards in the chart: valid, templated, and querying only metrics that exist.

Metric and label names are parsed out of every PromQL expression and checked
against the collectors declared in ``reag.metrics`` and the ones FastStream's
Prometheus middleware registers for the broker ``services.kit.broker`` builds.
A renamed metric breaks this test instead of leaving an empty panel.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any, get_args

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.registry import Collector

from reag import metrics
from reag.judging.cascade import Decision
from reag.ledger.summary import OUTCOME_NAMES
from services.kit.broker import make_broker
from services.kit.settings import KafkaSettings
from tests.unit.deploy.promrules import PENDING_SERIES, recordings

REPO = Path(__file__).resolve().parents[3]
DASHBOARDS = REPO / "deploy" / "helm" / "reag" / "dashboards"
OPERATIONS = REPO / "docs" / "operations.md"
Dashboard = dict[str, Any]

# Labels Prometheus attaches to every scraped series, whatever the exporter declared.
TARGET_LABELS = frozenset({"instance", "job", "namespace", "pod"})
GRAFANA_BUILTINS = frozenset({"__rate_interval", "__range", "__interval", "__all"})
PROMQL_KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset",
     "and", "or", "unless", "inf", "nan"}
)  # fmt: skip

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGE = re.compile(r"\[[^\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENT = re.compile(r"(?<![\w.$])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?")
_SELECTOR = re.compile(r"(?<![\w.$])([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^{}]*)\}")
_MATCHER = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
_VARIABLE = re.compile(r"\$\{?([a-zA-Z_][a-zA-Z0-9_]*)")
_LABEL_VALUES = re.compile(r"label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*(\w+)\s*\)")


def metric_names(expr: str) -> set[str]:
    """The metric names in a PromQL expression: identifiers not functions, keywords or labels."""
    bare = _STRING.sub('""', expr)
    bare = _MATCHERS.sub("{}", bare)
    bare = _RANGE.sub("", bare)
    bare = _GROUPING.sub(" ", bare)
    return {
        match.group(1)
        for match in _IDENT.finditer(bare)
        if match.group(2) is None and match.group(1) not in PROMQL_KEYWORDS
    }


def selectors(expr: str) -> Iterator[tuple[str, list[tuple[str, str, str]]]]:
    """(metric, [(label, operator, value), ...]) for every ``metric{...}`` in the expression."""
    for match in _SELECTOR.finditer(expr):
        yield match.group(1), _MATCHER.findall(match.group(2))


def exposed(collectors: Sequence[Collector]) -> dict[str, frozenset[str]]:
    """Sample name -> label names, for the series these collectors expose."""
    table: dict[str, frozenset[str]] = {}
    for collector in collectors:
        assert isinstance(collector, MetricWrapperBase), collector
        (family,) = collector.describe()
        # prometheus_client has no public accessor for a collector's label names.
        labels = frozenset(collector._labelnames)
        if family.type == "counter":
            table[f"{family.name}_total"] = labels
        elif family.type == "gauge":
            table[family.name] = labels
        elif family.type == "histogram":
            table[f"{family.name}_bucket"] = labels | {"le"}
            table[f"{family.name}_sum"] = labels
            table[f"{family.name}_count"] = labels
        else:
            raise AssertionError(f"{family.name}: no dashboard rule for type {family.type}")
    return table


class _RecordingRegistry(CollectorRegistry):
    def __init__(self) -> None:
        super().__init__()
        self.collectors: list[Collector] = []

    def register(self, collector: Collector) -> None:
        super().register(collector)
        self.collectors.append(collector)


def declared_series() -> dict[str, frozenset[str]]:
    """Every series reag and FastStream's middleware can expose, with its label names."""
    reag = [c for c in vars(metrics).values() if isinstance(c, MetricWrapperBase)]
    registry = _RecordingRegistry()
    make_broker(KafkaSettings(), "dashboard-test", registry=registry)
    assert registry.collectors, "the broker registered no FastStream metrics"
    return exposed(reag) | exposed(registry.collectors)


@pytest.fixture(scope="module")
def known_series() -> dict[str, frozenset[str]]:
    return declared_series()


def load(name: str) -> Dashboard:
    board: Dashboard = json.loads((DASHBOARDS / f"{name}.json").read_text())
    return board


def all_dashboards() -> list[Dashboard]:
    return [json.loads(p.read_text()) for p in sorted(DASHBOARDS.glob("*.json"))]


def panels(board: Dashboard) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for panel in board["panels"]:
        found.append(panel)
        found += panel.get("panels", [])
    return found


def expressions(board: Dashboard) -> list[str]:
    return [t["expr"] for p in panels(board) for t in p.get("targets", [])]


def variables(board: Dashboard) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in board["templating"]["list"]}


def variable_queries(board: Dashboard) -> list[str]:
    return [v["definition"] for v in variables(board).values() if v["type"] == "query"]


def queried(board: Dashboard) -> set[str]:
    names: set[str] = set()
    for expr in expressions(board):
        names |= metric_names(expr)
    return names


# --- the PromQL reader itself ------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ('sum by (tier, le) (rate(reag_judge_seconds_bucket{tier=~"$tier"}[$__rate_interval]))',
         {"reag_judge_seconds_bucket"}),
        ('sum by (tier, decision) (rate(a_total{x="by (y)"}[5m])) / ignoring (decision) '
         "group_left sum by (tier) (rate(b_total[5m]))", {"a_total", "b_total"}),
        ('histogram_quantile(0.95, sum by (le) (rate(x_bucket{le="0.5"}[1m]))) * 3600 + 1e-6',
         {"x_bucket"}),
        ("max by (tier, app) (present_gauge) or vector(0)", {"present_gauge"}),
        ("sort_desc(sum without (pod) (increase(c_total[$__range])))", {"c_total"}),
        ("up == bool 1 unless on (job) down", {"up", "down"}),
    ],
)  # fmt: skip
def test_metric_names_are_read_out_of_promql(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


def test_selectors_are_read_with_their_matchers() -> None:
    expr = 'rate(m_total{a="1", b=~"x|y"}[5m]) / n{c!="z"}'
    assert list(selectors(expr)) == [
        ("m_total", [("a", "=", "1"), ("b", "=~", "x|y")]),
        ("n", [("c", "!=", "z")]),
    ]


def test_exposed_series_follow_prometheus_naming(known_series: dict[str, frozenset[str]]) -> None:
    assert known_series["reag_llm_calls_total"] == {"model", "service", "tier", "kind", "outcome"}
    assert known_series["reag_judge_confidence_bucket"] == {"tier", "le"}
    assert "reag_judge_confidence" not in known_series
    assert "reag_faststream_received_messages_total" in known_series
    assert "reag_faststream_received_messages_in_process" in known_series


# --- the dashboards ------------------------------------------------------------------


def test_three_dashboards_with_distinct_uids() -> None:
    boards = all_dashboards()
    assert {b["uid"] for b in boards} == {"reag-overview", "reag-judge-cascade", "reag-llm-spend"}
    for board in boards:
        assert board["schemaVersion"] >= 37, "Grafana 10+ schema"
        assert board["title"].startswith("reag /")
        ids = [p["id"] for p in panels(board)]
        assert len(ids) == len(set(ids)), board["uid"]


def test_panels_fit_the_grid_without_overlapping() -> None:
    for board in all_dashboards():
        boxes = [(p["title"], p["gridPos"]) for p in panels(board)]
        for title, g in boxes:
            assert g["x"] >= 0, (board["uid"], title)
            assert g["x"] + g["w"] <= 24, (board["uid"], title)
        for (t1, a), (t2, b) in combinations(boxes, 2):
            apart = (a["x"] + a["w"] <= b["x"] or b["x"] + b["w"] <= a["x"]
                     or a["y"] + a["h"] <= b["y"] or b["y"] + b["h"] <= a["y"])  # fmt: skip
            assert apart, (board["uid"], t1, t2)


def test_data_source_is_a_template_variable_everywhere() -> None:
    for board in all_dashboards():
        datasource = variables(board)["datasource"]
        assert datasource["type"] == "datasource"
        assert datasource["query"] == "prometheus"
        for panel in panels(board):
            if panel["type"] == "row":
                continue
            assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
            for target in panel["targets"]:
                assert target["datasource"]["uid"] == "${datasource}", panel["title"]


def test_app_and_tier_are_template_variables() -> None:
    for name in ("reag-overview", "reag-judge-cascade"):
        assert {"app", "tier"} <= set(variables(load(name))), name
    # LLM series carry no app label: that board filters by who paid instead.
    assert {"service", "tier", "model"} <= set(variables(load("reag-llm-spend")))
    for board in all_dashboards():
        for var in variables(board).values():
            if var["type"] == "query":
                # "All" must match the empty tier of non-judge LLM calls too.
                assert var["includeAll"] is True, (board["uid"], var["name"])
                assert var["allValue"] == ".*", (board["uid"], var["name"])


def test_every_variable_used_is_defined() -> None:
    for board in all_dashboards():
        defined = set(variables(board)) | GRAFANA_BUILTINS
        for expr in expressions(board) + variable_queries(board):
            assert set(_VARIABLE.findall(expr)) <= defined, (board["uid"], expr)


def test_every_queried_metric_exists(known_series: dict[str, frozenset[str]]) -> None:
    for board in all_dashboards():
        for expr in expressions(board):
            assert "__name__" not in expr, "name regexes would hide metric names from this test"
            unknown = metric_names(expr) - set(known_series)
            assert not unknown, (board["uid"], unknown, expr)
        for query in variable_queries(board):
            ((metric, label),) = _LABEL_VALUES.findall(query)
            assert label in known_series[metric], (board["uid"], query)


def assert_labels_exist(expr: str, known_series: dict[str, frozenset[str]]) -> None:
    for metric, matchers in selectors(expr):
        allowed = known_series[metric] | TARGET_LABELS
        for label, _, _ in matchers:
            assert label in allowed, (metric, label, expr)


def test_every_label_matcher_names_a_label_of_its_metric(
    known_series: dict[str, frozenset[str]],
) -> None:
    for board in all_dashboards():
        for expr in expressions(board):
            assert_labels_exist(expr, known_series)


def test_alerts_in_the_operations_guide_query_existing_series(
    known_series: dict[str, frozenset[str]],
) -> None:
    blocks = re.findall(r"```promql\n(.*?)```", OPERATIONS.read_text(), flags=re.DOTALL)
    assert len(blocks) >= 10
    # The guide quotes the rules file: its recorded series and the gauges being added count.
    recorded = {rule["record"]: frozenset[str]() for rule in recordings()}
    series = PENDING_SERIES | known_series | recorded
    for expr in blocks:
        names = metric_names(expr)
        assert names, expr
        assert names <= set(series), (names - set(series), expr)
        assert_labels_exist(expr, series)


def test_label_values_in_matchers_are_values_the_code_emits() -> None:
    domains = {
        ("reag_judge_decisions_total", "decision"): set(get_args(Decision)),
        ("reag_results_total", "outcome"): set(OUTCOME_NAMES.values()),
        ("reag_review_agreement_total", "agreed"): {"true", "false"},
    }
    checked = 0
    for board in all_dashboards():
        for expr in expressions(board):
            for metric, matchers in selectors(expr):
                for label, op, value in matchers:
                    domain = domains.get((metric, label))
                    if domain is None or op in ("!=", "!~") or "$" in value:
                        continue
                    assert set(value.split("|")) <= domain, (board["uid"], metric, value)
                    checked += 1
    assert checked >= 5


def test_overview_covers_throughput_dead_letters_lag_and_results() -> None:
    assert {
        "reag_events_consumed_total", "reag_dead_letters_total", "reag_consumer_lag_messages",
        "reag_results_total", "reag_stage_seconds_bucket",
    } <= queried(load("reag-overview"))  # fmt: skip


def test_cascade_covers_decisions_confidence_thresholds_latency_and_cost() -> None:
    assert {
        "reag_judge_requests_total", "reag_judge_decisions_total", "reag_judge_verdicts_total",
        "reag_judge_confidence_bucket", "reag_judge_threshold", "reag_judge_threshold_present",
        "reag_judge_seconds_bucket", "reag_llm_call_cost_usd_bucket", "reag_criterion_cost_usd_sum",
        "reag_judge_cost_usd_total",
    } <= queried(load("reag-judge-cascade"))  # fmt: skip


def test_llm_spend_covers_calls_tokens_usd_retries_and_budget() -> None:
    assert {
        "reag_llm_calls_total", "reag_llm_tokens_total", "reag_llm_cost_usd_total",
        "reag_llm_retries_total", "reag_llm_budget_remaining_usd",
    } <= queried(load("reag-llm-spend"))  # fmt: skip


def test_confidence_heatmap_reads_histogram_buckets() -> None:
    (heatmap,) = [p for p in panels(load("reag-judge-cascade")) if p["type"] == "heatmap"]
    (target,) = heatmap["targets"]
    assert target["format"] == "heatmap"
    assert metric_names(target["expr"]) == {"reag_judge_confidence_bucket"}
    assert re.search(r"by \(le\)", target["expr"])
    assert heatmap["options"]["calculate"] is False


def test_honest_cost_charges_every_tier_a_criterion_passed() -> None:
    (panel,) = [
        p for p in panels(load("reag-judge-cascade")) if p["title"] == "Honest cost per tier"
    ]
    assert len(panel["targets"]) == 3
    for tier, target in enumerate(panel["targets"], start=1):
        charged = {
            int(value)
            for metric, matchers in selectors(target["expr"])
            if metric == "reag_judge_cost_usd_total"
            for label, _, value in matchers
            if label == "tier"
        }
        assert charged == set(range(1, tier + 1)), target["expr"]
