"""The dashboards and the alert rules, evaluated on a real Prometheus that scraped a running reag.

Debian's ``prometheus`` scrapes (every second) the metrics endpoint of every reag
service, run in one child process with scripted models over the real broker
(``scripted_stack``), and loads the chart's rules file. Real events flow: cases
that are accepted at tier 1, escalated and accepted at tier 2, abstained after
tier 3, dead-lettered (undecodable bytes, a model that refuses) and shed by the
app's rate limit; reviewers' labels follow, and the calibrator publishes new
thresholds. Then every panel query of every dashboard (template variables set
to All) must return series, except the few in ``EXPECTED_EMPTY_PANELS``, each
with its reason; every rule must evaluate without error, every series an alert
reads must exist (``EXPECTED_ABSENT_SERIES`` and the gauges being added in
``PENDING_SERIES`` aside), and the dead-letter alert must fire for each kind of
dead letter the run made.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from reag.v1 import events_pb2 as pb
from services.kit.admin import ensure_topics
from services.kit.settings import KafkaSettings
from services.kit.testing import produce_events, read_events, run_tag
from services.kit.topology import JUDGE_TIER, RESULTS, REVIEWS, THRESHOLDS, TRAFFIC
from shell.stack.ports import free_port
from tests.integration.observability import scripted_stack
from tests.unit.deploy.promrules import PENDING_SERIES, RULES, alerts, recordings, rules
from tests.unit.deploy.test_dashboards import metric_names, selectors

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]
DASHBOARDS = REPO / "deploy" / "helm" / "reag" / "dashboards"
APP = scripted_stack.APP
SCRAPE_S = 1

# (dashboard uid, panel title) -> why this run leaves it empty.
EXPECTED_EMPTY_PANELS = {
    ("reag-overview", "Handler exceptions"): (
        "services/kit/delivery turns every handler failure into a dead letter, so "
        "FastStream counts an exception only when even the dead letter cannot be published"
    ),
    ("reag-overview", "Publish failures"): (
        "a publish fails only when the broker refuses it; this run's broker is healthy"
    ),
    ("reag-llm-spend", "Calls refused by the budget"): (
        "a refusal stops the stage until the budget is raised; the run keeps within its budget"
    ),
}
# Series an alert reads that this run does not produce, and why.
EXPECTED_ABSENT_SERIES = {
    'reag_llm_calls_total{outcome="refused_budget"}': EXPECTED_EMPTY_PANELS[
        ("reag-llm-spend", "Calls refused by the budget")
    ],
    "reag_faststream_received_processed_messages_exceptions_total": EXPECTED_EMPTY_PANELS[
        ("reag-overview", "Handler exceptions")
    ],
    "reag_faststream_published_messages_exceptions_total": EXPECTED_EMPTY_PANELS[
        ("reag-overview", "Publish failures")
    ],
    "reag_transient_retries_total": (
        "no transient fault (database, broker, LLM outage, budget) happens in this run; "
        "tests/integration/kit and `make chaos` cause them"
    ),
}
MARKERS = ("SURE-YES", "SURE-NO", "FAIRLY-SURE", "UNSURE")


class PrometheusError(AssertionError):
    """Prometheus' HTTP API answered with an error; the message carries it."""


@dataclass
class Prometheus:
    url: str

    def get(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(f"{self.url}{path}{query}", timeout=30) as response:
            body = json.loads(response.read())
        if body.get("status") != "success":
            raise PrometheusError(f"{path} {params}: {body}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        try:
            data = self.get("/api/v1/query", query=expr)
        except urllib.error.HTTPError as exc:
            raise PrometheusError(f"{expr}: {exc.read().decode(errors='replace')}") from exc
        result: list[dict[str, Any]] = data["result"]
        return result

    def value(self, expr: str) -> float:
        result = self.query(expr)
        return float(result[0]["value"][1]) if result else 0.0


@dataclass
class Run:
    prometheus: Prometheus
    bootstrap: str
    suffix: str
    started: float


def wait_http(url: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture
def prometheus_binary() -> str:
    found = shutil.which("prometheus")
    if found is None:
        pytest.fail(
            "prometheus not found: install Debian's prometheus package; the dashboards "
            "are unproven until then",
            pytrace=False,
        )
    return found


@pytest.fixture
async def suffix(kafka_bootstrap: str) -> str:
    """Fresh topics ``<topic><suffix>`` for this run (and the shared DLQ)."""
    suffix = f".{uuid.uuid4().hex[:10]}"
    kafka = KafkaSettings(bootstrap_servers=kafka_bootstrap)
    await ensure_topics(kafka, suffix)
    await ensure_topics(kafka)
    return suffix


@dataclass
class Processes:
    stack: subprocess.Popen[bytes]
    stack_log: Path
    ready_file: Path
    prometheus_url: str


@pytest.fixture
def processes(
    kafka_bootstrap: str, suffix: str, tmp_path: Path, prometheus_binary: str
) -> Iterator[Processes]:
    """The scripted stack, and a Prometheus scraping it every second with reag's rules."""
    metrics_port, web_port = free_port(), free_port()
    state = tmp_path / "stack"
    state.mkdir()
    env = {**os.environ, "REAG_TIER_MODELS": "", "REAG_TIER_ANNOTATORS": ""}
    stack_log = tmp_path / "stack.log"
    with stack_log.open("wb") as log:
        stack = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.observability.scripted_stack",
             "--bootstrap", kafka_bootstrap, "--suffix", suffix,
             "--metrics-port", str(metrics_port), "--state-dir", str(state)],
            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    config = tmp_path / "prometheus.yml"
    config.write_text(
        json.dumps(
            {
                "global": {"scrape_interval": f"{SCRAPE_S}s", "evaluation_interval": "1s"},
                "rule_files": [str(RULES)],
                "scrape_configs": [
                    {
                        "job_name": "reag",
                        # As the chart's ServiceMonitor: reag's own `service` label stays.
                        "honor_labels": True,
                        "static_configs": [{"targets": [f"127.0.0.1:{metrics_port}"]}],
                    }
                ],
            }
        )
    )
    with (tmp_path / "prometheus.log").open("wb") as log:
        prom = subprocess.Popen(
            [prometheus_binary, f"--config.file={config}",
             f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{web_port}", "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=log,
        )  # fmt: skip
    try:
        yield Processes(stack, stack_log, state / "ready", f"http://127.0.0.1:{web_port}")
    finally:
        stop(prom)
        stop(stack)


@pytest.fixture
async def run(kafka_bootstrap: str, suffix: str, processes: Processes) -> Run:
    """Once the stack's brokers have started and Prometheus is ready."""
    deadline = time.monotonic() + 240
    while not processes.ready_file.exists():
        tail = processes.stack_log.read_text(errors="replace")[-3000:]
        assert processes.stack.poll() is None, tail
        assert time.monotonic() < deadline, tail
        await asyncio.sleep(0.5)
    await asyncio.to_thread(wait_http, f"{processes.prometheus_url}/-/ready", 60)
    return Run(Prometheus(processes.prometheus_url), kafka_bootstrap, suffix, time.time())


def traffic(case: str, marker: str, query: str = "") -> pb.Traffic:
    event = pb.Traffic(
        query=query or f"Can I drink this coconut water? ({case})",
        actual_response=f"Yes, it is very healthy. {marker}.",
        profile=pb.UserProfile(description="On dialysis three times a week."),
        request_id=case,
    )
    event.meta.case_id, event.meta.app, event.meta.schema_version = case, APP, 1
    return event


def review(request: pb.JudgeRequest, label: pb.Label.ValueType) -> pb.Review:
    event = pb.Review(
        criterion_id=request.criterion.criterion_id, label=label, reviewer="qa", item=request
    )
    # Labelled as audits: only exchangeable labels (audits, a uniform sample) recalibrate.
    event.item.audit = True
    event.meta.CopyFrom(request.meta)
    return event


def reviewer_label(marker: str, index: int) -> pb.Label.ValueType:
    """Labels as an expert might give them: mostly with the judges, not always."""
    if marker == "SURE-YES":
        return pb.LABEL_YES
    if marker == "SURE-NO":
        return pb.LABEL_NO
    if marker == "FAIRLY-SURE":
        return pb.LABEL_NO if index == 0 else pb.LABEL_YES
    return pb.LABEL_YES if index % 2 else pb.LABEL_NO


def grafana(expr: str, range_s: int) -> str:
    """The query Grafana sends with every template variable on All."""
    values = {"__rate_interval": "30s", "__interval": "5s", "__range": f"{range_s}s"}

    def substitute(match: re.Match[str]) -> str:
        return values.get(match.group(1), ".*")

    return re.sub(r"\$\{?([a-zA-Z_][a-zA-Z0-9_]*)\}?", substitute, expr)


def dashboard_panels() -> Iterator[tuple[str, str, list[str]]]:
    for path in sorted(DASHBOARDS.glob("*.json")):
        board = json.loads(path.read_text())
        stack = list(board["panels"])
        while stack:
            panel = stack.pop(0)
            stack += panel.get("panels", [])
            if panel.get("targets"):
                yield board["uid"], panel["title"], [t["expr"] for t in panel["targets"]]


def variable_queries() -> Iterator[tuple[str, str, str]]:
    for path in sorted(DASHBOARDS.glob("*.json")):
        board = json.loads(path.read_text())
        for var in board["templating"]["list"]:
            if var["type"] == "query":
                (found,) = re.findall(r"label_values\((\w+),\s*(\w+)\)", var["definition"])
                yield board["uid"], found[0], found[1]


def series_read(expr: str) -> set[str]:
    """Each vector selector of an expression, as a query of its own."""
    found = {
        f"{name}{{{body}}}" for name, body in re.findall(r"([a-zA-Z_:][\w:]*)\{([^{}]*)\}", expr)
    }
    with_matchers = {name for name, _ in selectors(expr)}
    return found | (metric_names(expr) - with_matchers)


async def until(condition: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not await asyncio.to_thread(condition):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(1)


async def drive(run: Run) -> dict[str, str]:
    """Cases, poison, shed traffic, then reviews; returns case id -> marker."""
    tag = run_tag()
    cases = {f"obs-{tag}-{i}": MARKERS[i % len(MARKERS)] for i in range(8)}
    refused = traffic(f"obs-{tag}-refused", "SURE-YES", query=f"{scripted_stack.REFUSE} please")
    shed = [traffic(f"obs-{tag}-shed-{i}", "SURE-YES") for i in range(2)]
    events: list[pb.Traffic | bytes] = [traffic(c, m) for c, m in cases.items()]
    events += [refused, b"\xff\xfe not protobuf", *shed]
    # One key: one partition, so the rate limit sheds exactly the last two.
    assert len(cases) + 1 == scripted_stack.MAX_CASES_PER_MINUTE
    await produce_events(run.bootstrap, TRAFFIC + run.suffix, events, APP)

    results = await read_events(
        run.bootstrap, RESULTS + run.suffix, pb.Result,
        lambda rs: {r.meta.case_id for r in rs if r.complete} >= set(cases), timeout_s=180,
    )  # fmt: skip
    outcome = {r.meta.case_id: r.outcome for r in results if r.complete}
    for case, marker in cases.items():
        assert (outcome[case] == pb.OUTCOME_ABSTAIN) == (marker == "UNSURE"), (case, marker)

    criteria = scripted_stack.N_CRITERIA * len(cases)
    requests = await read_events(
        run.bootstrap, JUDGE_TIER[1] + run.suffix, pb.JudgeRequest,
        lambda rs: len([r for r in rs if r.meta.case_id in cases]) >= criteria,
    )  # fmt: skip
    ours = sorted(
        (r for r in requests if r.meta.case_id in cases), key=lambda r: r.criterion.criterion_id
    )
    reviews = [
        review(r, reviewer_label(cases[r.meta.case_id], i))
        for i, r in enumerate(ours[: scripted_stack.RECALIBRATE_EVERY])
    ]
    assert {cases[r.meta.case_id] for r in reviews} == set(MARKERS)
    await produce_events(run.bootstrap, REVIEWS + run.suffix, reviews, lambda r: r.meta.case_id)
    thresholds = await read_events(
        run.bootstrap, THRESHOLDS + run.suffix, pb.Threshold,
        lambda ts: len(ts) >= 2 * len(scripted_stack.INITIAL_THRESHOLDS), timeout_s=120,
    )  # fmt: skip
    assert len(thresholds) == 2 * len(scripted_stack.INITIAL_THRESHOLDS)
    return cases


async def test_every_panel_and_rule_evaluates_on_a_prometheus_that_scraped_reag(
    run: Run,
) -> None:
    cases = await drive(run)
    prometheus = run.prometheus
    # Prometheus must have scraped the end of the run, and the rules evaluated on it.
    await until(
        lambda: (
            prometheus.value('sum(reag_results_total{app="nutrition"})') >= len(cases)
            and prometheus.value("sum(reag_calibration_runs_total)") >= 1
            and prometheus.value("sum(reag_reviews_total)") >= scripted_stack.RECALIBRATE_EVERY
        ),
        60,
        "Prometheus to scrape the whole run",
    )
    await asyncio.sleep(3 * SCRAPE_S)
    range_s = int(time.time() - run.started) + 60

    empty: dict[tuple[str, str], list[str]] = {}
    answered: dict[tuple[str, str], list[str]] = {}
    for uid, title, exprs in dashboard_panels():
        for expr in exprs:
            found = prometheus.query(grafana(expr, range_s))
            (answered if found else empty).setdefault((uid, title), []).append(expr)
    partly = set(empty) & set(answered)
    assert not partly, f"panels with some queries empty: {sorted(partly)}"
    assert set(empty) == set(EXPECTED_EMPTY_PANELS), (
        f"empty panels not expected: {sorted(set(empty) - set(EXPECTED_EMPTY_PANELS))}; "
        f"expected empty but answered: {sorted(set(EXPECTED_EMPTY_PANELS) - set(empty))}"
    )
    assert answered

    # What Prometheus scraped is this run, counted right.
    # At least every case the judges decided; a case whose abstained criteria were all
    # reviewed is decided again by the ledger, one result more.
    decided = len([m for m in cases.values() if m != "UNSURE"])
    assert prometheus.value('sum(reag_results_total{outcome=~"PASS|FAIL"})') >= decided
    counts = {
        'sum(reag_results_total{outcome="ABSTAIN"})': list(cases.values()).count("UNSURE"),
        'sum(reag_traffic_shed_total{reason="rate_limited"})': 2,
        "sum(reag_dead_letters_total)": 2,
        'sum(reag_llm_retries_total{reason="RateLimitedError"})': 1,
        'sum(reag_reviews_total{app="nutrition"})': scripted_stack.RECALIBRATE_EVERY,
    }
    for expr, expected in counts.items():
        assert prometheus.value(expr) == expected, expr
    assert prometheus.value("sum(reag_judge_cost_usd_total)") > 0
    assert prometheus.value('sum(reag_judge_decisions_total{decision="escalated"})') > 0

    for uid, metric, label in variable_queries():
        values = prometheus.query(f"group by ({label}) ({metric})")
        assert values, (uid, metric, label)

    # Every rule evaluated, and nothing it reads is missing.
    groups = prometheus.get("/api/v1/rules")["groups"]
    evaluated = {r["name"]: r for g in groups for r in g["rules"]}
    assert set(evaluated) == {r.get("alert") or r.get("record") for r in rules()}
    for name, rule in evaluated.items():
        assert rule["health"] == "ok", (name, rule.get("lastError"))
    for rule in recordings():
        assert prometheus.query(rule["record"]), f"{rule['record']} recorded nothing"
    absent: set[str] = set()
    for rule in rules():
        prometheus.query(rule["expr"])
        for selector in series_read(rule["expr"]):
            if not prometheus.query(selector):
                absent.add(selector)
    pending = {s for s in absent if metric_names(s) <= set(PENDING_SERIES)}
    assert absent - pending == set(EXPECTED_ABSENT_SERIES), (
        f"missing: {sorted(absent - pending - set(EXPECTED_ABSENT_SERIES))}; "
        f"expected absent but present: {sorted(set(EXPECTED_ABSENT_SERIES) - absent)}"
    )

    # The first dead letter of each kind pages at once (no `for`), new series included.
    firing = prometheus.get("/api/v1/alerts")["alerts"]
    dead = {
        (a["labels"]["service"], a["labels"]["error_type"])
        for a in firing
        if a["labels"]["alertname"] == "ReagDeadLetters" and a["state"] == "firing"
    }
    assert {("elicitor", "undecodable"), ("oracle", "llm_error")} <= dead, firing
    assert {a["labels"]["alertname"] for a in firing} <= {r["alert"] for r in alerts()}
