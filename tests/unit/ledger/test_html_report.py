"""``reag report --html``: counts equal ``reag results --json``, untrusted text is inert,
and the page renders offline in headless Chromium (Debian's package) to a non-blank picture.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import shutil
import subprocess
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import typer
from PIL import Image, ImageStat
from typer.testing import CliRunner

from reag.calibration.scores import ScoreRecord, write_scores
from reag.ledger.store import LedgerStore
from reag.v1 import events_pb2 as pb
from shell.cli import report as report_cli
from shell.cli import results as results_cli

from .conftest import NO, YES, Events

runner = CliRunner()
RUN = "r-html"
# Script that would mark the page if it ever ran; the check looks for the attribute it sets.
PAYLOAD = (
    "<script>document.documentElement.setAttribute('data-pwned','1')</script>"
    "<img src=x onerror=\"document.documentElement.setAttribute('data-pwned','1')\">"
)
CHROMIUM = shutil.which("chromium")
ALPHAS = ("--alphas", "0.10:0.30:0.05")  # a short sweep: five α


@pytest.fixture
def cli() -> typer.Typer:
    app = typer.Typer()
    results_cli.register(app)
    report_cli.register(app)
    return app


def _hostile(ev: Events) -> pb.Oracle:
    oracle = ev.oracle()
    oracle.interpretation.intention.query = f"What should I eat? {PAYLOAD}"
    oracle.interpretation.intention.actual_response = f"Pasta. {PAYLOAD}"
    oracle.test_objective = f"Check the plan {PAYLOAD}"
    oracle.interpretation.documents[0].title = f"Diet rules {PAYLOAD}"
    oracle.interpretation.documents[0].kind = "requirement"
    for criterion in oracle.criteria:
        criterion.text = f"{criterion.text} {PAYLOAD}"
    return oracle


@pytest.fixture
def dsn(sqlite_dsn: str) -> str:
    """Run r-html: 3 PASS (one decided at tier 2), 2 FAIL, 2 ABSTAIN, 1 reviewed, 1 pending;
    one case of another run that the report must leave out."""
    store = LedgerStore.open(sqlite_dsn)
    for n in range(9):
        ev = Events(f"nutrition-h{n:02d}", run_id=RUN, n=2)
        store.record_oracle(_hostile(ev))
        store.record_verdict(ev.verdict(0, YES, tier=2 if n == 1 else 1))
        if n in (3, 4):
            store.record_verdict(ev.verdict(1, NO, tier=3))
        elif n in (5, 6, 7):
            store.record_abstain(ev.abstain(1))
            if n == 7:
                store.record_review(ev.review(1, YES))
        elif n == 8:
            continue  # pending: the second criterion never arrived
        else:
            verdict = ev.verdict(1, YES)
            verdict.evidence[0].sentence = f"Plans fit the diet. {PAYLOAD}"
            store.record_verdict(verdict)
    other = Events("nutrition-other", run_id="r-other", n=1)
    store.record_verdict(other.verdict(0, YES))
    store.close()
    return sqlite_dsn


@pytest.fixture
def scores(tmp_path: Path) -> Path:
    """Three tiers of judge scores on 240 labelled items: higher tiers agree more often."""
    rng = random.Random(13)
    records = []
    for i in range(240):
        label = rng.choice(("YES", "NO"))
        for tier in (1, 2, 3):
            confidence = rng.uniform(0.5, 1.0)
            right = rng.random() < 0.35 + 0.2 * tier * confidence
            wrong = "NO" if label == "YES" else "YES"
            records.append(
                ScoreRecord(
                    item_id=f"item-{i}",
                    tier=tier,
                    verdict=label if right else wrong,
                    confidence=confidence,
                    label=label,
                )
            )
    path = tmp_path / "scores.jsonl"
    write_scores(path, records)
    return path


class _Attributes(HTMLParser):
    """Every element's attributes, in document order, and every URL-bearing attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.tags: Counter[str] = Counter()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        self.elements.append((tag, {k: v or "" for k, v in attrs}))

    def with_attribute(self, name: str) -> list[dict[str, str]]:
        return [a for _, a in self.elements if name in a]


def _parse(html: str) -> _Attributes:
    parser = _Attributes()
    parser.feed(html)
    return parser


def _report(cli: typer.Typer, dsn: str, out: Path, *extra: str) -> str:
    result = runner.invoke(
        cli, ["report", "--html", str(out), "--run", RUN, "--store", dsn, *extra]
    )
    assert result.exit_code == 0, result.output
    return out.read_text(encoding="utf-8")


def _expected_from_results_json(cli: typer.Typer, dsn: str) -> dict[str, Any]:
    """The run's counts from ``reag results --json``, tallied here from the JSON alone."""
    result = runner.invoke(cli, ["results", "--json", "--run-id", RUN, "--store", dsn])
    assert result.exit_code == 0, result.output
    listed = json.loads(result.output)
    outcomes = Counter(r.get("outcome", "OUTCOME_UNSPECIFIED") for r in listed)
    tiers: dict[int, Counter[str]] = {}
    for r in listed:
        for c in r.get("criteria", []):
            if not (c.get("accepted") or c.get("abstained")):
                continue
            machine = [
                a for a in c.get("history", []) if a.get("tier", 0) and a.get("method") != "review"
            ]
            for position, attempt in enumerate(machine):
                tally = tiers.setdefault(attempt["tier"], Counter())
                tally["requests"] += 1
                if position < len(machine) - 1:
                    tally["escalated"] += 1
                elif c.get("accepted"):
                    tally["accepted"] += 1
                else:
                    tally["abstained"] += 1
    return {
        "cases": {r["meta"]["case_id"]: r.get("outcome", "OUTCOME_UNSPECIFIED") for r in listed},
        "outcomes": outcomes,
        "cost": sum(r.get("total_cost_usd", 0.0) for r in listed),
        "tiers": tiers,
    }


def test_the_report_counts_equal_reag_results_json(
    cli: typer.Typer, dsn: str, tmp_path: Path
) -> None:
    expected = _expected_from_results_json(cli, dsn)
    page = _parse(_report(cli, dsn, tmp_path / "run.html"))

    (summary,) = [a for tag, a in page.elements if tag == "section" and a.get("id") == "summary"]
    outcomes = expected["outcomes"]
    assert int(summary["data-cases"]) == len(expected["cases"]) == 9
    assert int(summary["data-pass"]) == outcomes["OUTCOME_PASS"] == 4
    assert int(summary["data-fail"]) == outcomes["OUTCOME_FAIL"] == 2
    assert int(summary["data-abstain"]) == outcomes["OUTCOME_ABSTAIN"] == 2
    assert int(summary["data-pending"]) == outcomes["OUTCOME_UNSPECIFIED"] == 1
    assert int(summary["data-reviewed"]) == 1
    assert float(summary["data-cost-usd"]) == pytest.approx(expected["cost"])

    rows = {int(a["data-tier"]): a for tag, a in page.elements if a.get("class") == "tier"}
    assert sorted(rows) == sorted(expected["tiers"]) == [1, 2, 3]
    for tier, tally in expected["tiers"].items():
        for key in ("requests", "accepted", "escalated", "abstained"):
            assert int(rows[tier][f"data-{key}"]) == tally[key], (tier, key)

    names = {"PASS": "OUTCOME_PASS", "FAIL": "OUTCOME_FAIL", "ABSTAIN": "OUTCOME_ABSTAIN"}
    shown = {
        a["data-case-id"]: names.get(a["data-outcome"], "OUTCOME_UNSPECIFIED")
        for a in page.with_attribute("data-case-id")
    }
    assert shown == expected["cases"]
    assert "nutrition-other" not in shown


def test_untrusted_text_is_shown_escaped_and_nothing_can_run_or_fetch(
    cli: typer.Typer, dsn: str, tmp_path: Path
) -> None:
    html = _report(cli, dsn, tmp_path / "run.html")
    page = _parse(html)
    assert page.tags["script"] == 0
    assert html.count("&lt;script&gt;") >= 9 * 4  # query, response, objective, criteria...
    assert "Pasta. &lt;script&gt;" in html  # the app's response, from the store's oracle
    assert not any("onerror" in a for _, a in page.elements)
    assert not re.search(r"https?://", html, re.IGNORECASE)
    for _, attributes in page.elements:
        for name in ("src", "href", "action", "srcset", "background"):
            assert not attributes.get(name) or attributes[name].startswith("data:image/png")
    (csp,) = [a for tag, a in page.elements if tag == "meta" and "http-equiv" in a]
    assert csp["content"].startswith("default-src 'none'")


def test_without_scores_the_report_says_so_and_with_scores_it_embeds_the_charts(
    cli: typer.Typer, dsn: str, scores: Path, tmp_path: Path
) -> None:
    plain = _parse(_report(cli, dsn, tmp_path / "plain.html"))
    assert plain.tags["img"] == 0
    charted = _report(cli, dsn, tmp_path / "charted.html", "--scores", str(scores), *ALPHAS)
    page = _parse(charted)
    images = [a for tag, a in page.elements if tag == "img"]
    assert len(images) == 4  # calibration curves + the sweep's three plots
    assert all(a["src"].startswith("data:image/png;base64,") for a in images)
    assert len(page.with_attribute("data-alpha")) == 5


@pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (`make test` installs it)"
)
def test_headless_chromium_renders_the_report_offline_to_a_non_blank_page(
    cli: typer.Typer, dsn: str, scores: Path, tmp_path: Path
) -> None:
    assert CHROMIUM is not None
    out = tmp_path / "run.html"
    _report(cli, dsn, out, "--scores", str(scores), *ALPHAS)
    shot = tmp_path / "run.png"
    offline = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        # Every host name resolves to nothing and no proxy is tried: the page gets no network.
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--proxy-server=127.0.0.1:9",
        "--hide-scrollbars",
    ]
    subprocess.run(
        [*offline, f"--screenshot={shot}", "--window-size=1280,2400", out.as_uri()],
        check=True,
        capture_output=True,
        timeout=180,
    )
    with Image.open(shot) as image:
        assert image.size == (1280, 2400)
        grey = image.convert("L")
        assert ImageStat.Stat(grey).var[0] > 100.0  # a blank or single-colour page is ~0
        assert len(grey.getcolors(maxcolors=256 * 256) or ()) > 20
    dom = subprocess.run(
        [*offline, "--dump-dom", out.as_uri()],
        check=True,
        capture_output=True,
        timeout=180,
        text=True,
    ).stdout
    assert 'id="summary"' in dom  # the page was parsed
    assert 'data-pwned="1"' not in dom  # and nothing injected ran


async def test_through_the_results_api_the_counts_are_the_same_and_responses_are_absent(
    cli: typer.Typer, dsn: str, tmp_path: Path
) -> None:
    from reag.ledger.api import ResultsServer

    from_store = _parse(_report(cli, dsn, tmp_path / "store.html"))
    store = LedgerStore.open(dsn)
    server = ResultsServer(store, port=0)
    await server.start()
    out = tmp_path / "api.html"
    args = ["report", "--html", str(out), "--run", RUN, "--api", f"127.0.0.1:{server.port}"]
    try:
        # The CLI's channel is blocking; the server needs this event loop, so the CLI runs aside.
        done = await asyncio.to_thread(runner.invoke, cli, args)
    finally:
        await server.stop()
        store.close()
    assert done.exit_code == 0, done.output
    html = out.read_text(encoding="utf-8")
    from_api = _parse(html)

    def counts(page: _Attributes) -> list[dict[str, str]]:
        keep = ("summary", "tier", "case")
        return [
            {k: v for k, v in a.items() if k.startswith("data-")}
            for _, a in page.elements
            if a.get("id") in keep or a.get("class", "").split(" ")[0] in keep
        ]

    assert counts(from_api) == counts(from_store)
    assert "Pasta. &lt;script&gt;" not in html  # responses live in the store only
    assert "this report read results only" in html
