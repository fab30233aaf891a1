"""``reag review --web`` in headless Chromium on the real broker (issue 28's must-show test).

A reviewer signs in with a token, opens the queue, labels two items with the
keyboard (y, then n), and the two labels arrive on ``reag.reviews.v1`` with the
right criterion ids, in the queue's order (the audit of the app without a
threshold of its own first). Every response the page fetched is checked for
the blind rule: no item's judges (model, confidence, reason) in any response
before that item's label. A script and an ``onerror`` image in the app's
response and the user's request stay text. Screenshots of the queue and of an
item page are written to ``$REAG_REVIEW_SCREENSHOTS`` when it is set
(``docs/img`` for the docs).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from pathlib import Path

import pytest

from reag.calibration.store import CalibrationStore
from reag.review.queue import ReviewQueue
from reag.storage import open_store
from reag.v1 import events_pb2 as pb
from services.kit.admin import ensure_topics
from services.kit.settings import KafkaSettings, ServiceSettings
from services.kit.testing import produce_events, read_events, until
from services.kit.topology import ABSTAINS, REVIEWS
from shell.review_web.serve import WebOptions, run_web
from shell.stack.ports import free_port
from tests.integration.review.cdp import chromium_path, launch
from tests.unit.ledger.conftest import Events

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.slow,
    pytest.mark.skipif(chromium_path() is None, reason="needs Debian's chromium"),
]

TOKEN = "ann-" + "0123456789abcdef" * 2
XSS = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'
CONFIDENCES = {"a": 0.4321, "b": 0.5432, "c": 0.6543}


def item(app: str, tag: str, *, audit: bool) -> pb.Abstain:
    """An abstain whose judges carry markers (model, confidence) no page may show early."""
    abstain = Events(case_id=f"{app}-{tag}", app=app).abstain(0)
    abstain.audit = abstain.request.audit = audit  # as the cascade sets both
    confidence = CONFIDENCES[tag]
    for attempt in abstain.request.history:
        attempt.model = f"judge-secret-{tag}"
        attempt.confidence = confidence
    abstain.reason = (
        f"no tier was confident enough: tier 1 (judge-secret-{tag}) confidence "
        f"{confidence:.3f} < λ̂ 0.900"
    )
    abstain.request.actual_response = f"Pasta with cream. {XSS}"
    abstain.request.query = f"What should I eat tonight? {XSS}"
    return abstain


def secrets_of(tag: str) -> tuple[str, str]:
    return f"judge-secret-{tag}", f"{CONFIDENCES[tag]:.3f}"


async def test_two_keyboard_labels_reach_the_reviews_topic_blind_and_xss_inert(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:10]
    dsn = f"sqlite:///{tmp_path / 'reag.db'}"
    settings = ServiceSettings(
        kafka=KafkaSettings(bootstrap_servers=kafka_bootstrap),
        topic_suffix=suffix,
        store_dsn=dsn,
    )
    await ensure_topics(settings.kafka, suffix)
    # nutrition has a threshold of its own; the new app "bank" has none.
    threshold = pb.Threshold(app="nutrition", tier=1, model="m", has_threshold=True, threshold=0.9)
    threshold.computed_at.GetCurrentTime()
    CalibrationStore.open(dsn).record_thresholds([threshold], prompt_version="v", trigger="test")
    items = {
        "a": item("nutrition", "a", audit=False),  # an abstention: last
        "b": item("nutrition", "b", audit=True),  # an audit: second
        "c": item("bank", "c", audit=True),  # an audit of an app without a threshold: first
    }
    await produce_events(
        kafka_bootstrap, ABSTAINS + suffix, list(items.values()), lambda e: e.meta.case_id
    )
    tokens = tmp_path / "tokens"
    tokens.write_text(f"ann {TOKEN}\n")
    port = free_port()
    options = WebOptions(port=port, tokens_file=tokens, group=f"web-{suffix}")
    started, stop = asyncio.Event(), asyncio.Event()
    server = asyncio.create_task(run_web(settings, options, started=started, stop=stop))
    queue = ReviewQueue(open_store(dsn))
    base = f"http://127.0.0.1:{port}"
    shots = tmp_path / "shots"
    shots.mkdir()
    try:
        await asyncio.wait_for(started.wait(), 60)
        assert await until(lambda: sum(sum(c[1:3]) for c in queue.counts()) == 3, 60)
        async with await launch() as browser:
            await browser.goto(f"{base}/login")
            signed_in = browser.expect("Page.loadEventFired")
            await browser.evaluate(
                f"document.getElementById('token').value = '{TOKEN}';"
                "document.querySelector('form').submit(); true"
            )
            await asyncio.wait_for(signed_in, 30)
            await browser.settle()
            assert await browser.evaluate("document.querySelector('#apps') !== null")
            await browser.screenshot(shots / "review-queue.png")

            await browser.goto(f"{base}/next")
            first = await browser.evaluate("document.getElementById('item').dataset.criterion")
            assert first == items["c"].request.criterion.criterion_id
            # The payloads are text on the page, never markup, and nothing ran.
            assert await browser.evaluate("window.__xss === undefined")
            assert (
                await browser.evaluate("document.querySelector('#response img, #request img')")
                is None
            )
            assert XSS in await browser.evaluate("document.getElementById('response').textContent")
            await browser.screenshot(shots / "review-item.png")

            browser.labelled.add("c")
            await browser.press("y")
            shown = await browser.evaluate("document.getElementById('reveal').dataset.criterion")
            assert shown == first  # the judges of the item just labelled, above the next one
            second = await browser.evaluate("document.getElementById('item').dataset.criterion")
            assert second == items["b"].request.criterion.criterion_id
            await browser.screenshot(shots / "review-item-after-label.png")

            browser.labelled.add("b")
            await browser.press("n")
            third = await browser.evaluate("document.getElementById('item').dataset.criterion")
            assert third == items["a"].request.criterion.criterion_id
            assert await browser.evaluate("window.__xss === undefined")

            reviews = await read_events(
                kafka_bootstrap, REVIEWS + suffix, pb.Review, lambda rs: len(rs) >= 2
            )
            # Keyed by case, so the two may sit on different partitions: compare as a set.
            assert {(r.criterion_id, r.label, r.reviewer) for r in reviews} == {
                (first, pb.LABEL_YES, "ann"),
                (second, pb.LABEL_NO, "ann"),
            }
            assert len(reviews) == 2
            by_id = {r.criterion_id: r for r in reviews}
            assert by_id[first].item.audit
            assert by_id[first].meta.app == "bank"

            pages = [f for f in browser.fetched if "html" in f.mime]
            assert len(pages) >= 5, [f.url for f in browser.fetched]
            for fetched in browser.fetched:
                for tag in CONFIDENCES:
                    if tag in fetched.seen_after:
                        continue
                    for secret in secrets_of(tag):
                        assert secret not in fetched.body, (fetched.url, tag, secret)
            # The rule is not vacuous: the judges were shown once the label was given.
            assert any(secrets_of("c")[0] in f.body for f in browser.fetched)
    finally:
        stop.set()
        await asyncio.wait_for(server, 30)
    for shot in shots.iterdir():
        assert shot.read_bytes().startswith(b"\x89PNG")
    target = os.environ.get("REAG_REVIEW_SCREENSHOTS")
    if target:
        for shot in shots.iterdir():
            shutil.copy(shot, Path(target) / shot.name)
