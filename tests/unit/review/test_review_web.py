"""The web review's routes without a browser or a broker: sign-in, CSRF, blind rule, bind guard."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
import typer
from starlette.testclient import TestClient
from typer.testing import CliRunner

from reag.review.labels import ScriptedLabeler
from reag.review.queue import ReviewQueue
from reag.review.session import SourceItem, review_loop
from reag.storage import open_store
from reag.v1 import events_pb2 as pb
from shell.cli import review as review_cli
from shell.review_web.app import WebReview, build_app
from shell.review_web.auth import Auth, TokenFileError, UnsafeBindError, check_bind, load_tokens
from shell.review_web.io import StoreReviewIO, ingest_once
from tests.unit.ledger.conftest import Events

ANN, BEN = "ann-token-0123456789abcdef", "ben-token-0123456789abcdef"


class ListSink:
    def __init__(self) -> None:
        self.reviews: list[pb.Review] = []

    async def publish(self, review: pb.Review) -> None:
        self.reviews.append(review)


def web(tmp_path: Path, tokens: dict[str, str]) -> tuple[WebReview, ListSink]:
    queue = ReviewQueue(open_store(f"sqlite:///{tmp_path / 'q.db'}"))
    ev = Events(case_id="nutrition-web")
    for i in range(2):
        item = ev.abstain(i)
        item.request.actual_response = f"<script>alert({i})</script>"
        item.request.history[0].model = f"hidden-model-{i}"
        queue.add(item)
    sink = ListSink()
    return WebReview(queue=queue, sink=sink, auth=Auth(tokens, "local")), sink


def csrf(html: str) -> str:
    match = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert match, html
    return match.group(1)


def test_tokens_file_and_bind_guard(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"# reviewers\nann {ANN}\nben:{BEN}\n")
    assert load_tokens(path) == {ANN: "ann", BEN: "ben"}
    path.write_text("ann short\n")
    with pytest.raises(TokenFileError, match="under 16"):
        load_tokens(path)
    with pytest.raises(UnsafeBindError):
        check_bind("0.0.0.0", {})
    check_bind("127.0.0.1", {})
    check_bind("::1", {})
    check_bind("0.0.0.0", {ANN: "ann"})


def test_pages_need_a_token_and_labels_need_the_csrf_token(tmp_path: Path) -> None:
    review, sink = web(tmp_path, {ANN: "ann", BEN: "ben"})
    client = TestClient(build_app(review))
    assert client.get("/", follow_redirects=False).headers["location"] == "/login"
    assert client.post("/login", data={"token": "nope"}).status_code == 403
    evil = {"origin": "http://evil.example"}
    assert client.post("/login", data={"token": ANN}, headers=evil).status_code == 403
    assert client.post("/login", data={"token": ANN}).status_code == 200  # redirected to /
    page = client.get("/next")
    assert page.status_code == 200
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy
    assert "form-action 'self'" in policy
    key = page.url.path.rsplit("/", 1)[1]
    forged = client.post(f"/item/{key}", data={"vote": "YES"}, follow_redirects=False)
    assert forged.status_code == 403
    assert sink.reviews == []
    other = TestClient(build_app(review))  # ben's token does not make ann's CSRF token valid
    other.post("/login", data={"token": BEN})
    assert (
        other.post(f"/item/{key}", data={"vote": "YES", "csrf": csrf(page.text)}).status_code == 403
    )
    cross = client.post(f"/item/{key}", data={"vote": "YES", "csrf": csrf(page.text)}, headers=evil)
    assert cross.status_code == 403
    done = client.post(f"/item/{key}", data={"vote": "NO", "note": "n", "csrf": csrf(page.text)})
    assert done.status_code == 200
    assert [(r.reviewer, r.label, r.comment) for r in sink.reviews] == [("ann", pb.LABEL_NO, "n")]
    # The next item at once, with the labelled item's judges above it and none of its own.
    assert f"done={key}" in str(done.url)
    assert "hidden-model-0" in done.text
    assert "hidden-model-1" not in done.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in done.text
    assert "<script>alert" not in done.text


def test_the_judges_of_an_item_are_never_shown_to_a_reviewer_who_did_not_label_it(
    tmp_path: Path,
) -> None:
    review, _ = web(tmp_path, {})
    client = TestClient(build_app(review))
    first = client.get("/next")
    key = first.url.path.rsplit("/", 1)[1]
    assert "hidden-model" not in first.text
    peek = client.get(f"/next?done={key}")  # asking for the reveal before labelling
    assert "hidden-model" not in peek.text
    skipped = client.post(f"/item/{key}", data={"vote": "SKIP", "csrf": csrf(first.text)})
    assert "hidden-model" not in skipped.text  # a skip shows nothing either
    assert skipped.url.path != first.url.path  # and moves on to the other item


def test_exports_are_attachments_of_every_label(tmp_path: Path) -> None:
    review, _ = web(tmp_path, {})
    client = TestClient(build_app(review))
    page = client.get("/next")
    client.post(
        page.url.path, data={"vote": "CANNOT_TELL", "note": "no data", "csrf": csrf(page.text)}
    )
    exported = client.get("/export.csv")
    assert exported.headers["content-disposition"].startswith("attachment")
    assert "CANNOT_TELL,no data" in exported.text
    assert '"label": "CANNOT_TELL"' in client.get("/export.jsonl").text
    assert "Agreement per app" in client.get("/stats").text


class FakeKafka:
    """Abstains to hand out, reviews published, offsets committed: KafkaReviewIO's surface."""

    def __init__(self, abstains: list[pb.Abstain]) -> None:
        self.values = [a.SerializeToString() for a in abstains]
        self.committed = 0
        self.published: list[pb.Review] = []

    async def next(self, timeout_s: float) -> SourceItem | None:
        if not self.values:
            return None
        return SourceItem(self.values.pop(0), "abstains[0]@x")

    async def commit(self, item: SourceItem) -> None:
        self.committed += 1

    async def publish(self, review: pb.Review) -> None:
        self.published.append(review)


async def test_the_terminal_and_the_web_pages_share_one_queue(tmp_path: Path) -> None:
    ev = Events(case_id="nutrition-shared", n=3)
    kafka = FakeKafka([ev.abstain(i) for i in range(3)])
    queue = ReviewQueue(open_store(f"sqlite:///{tmp_path / 'q.db'}"))
    while await ingest_once(kafka, queue, 0.0):  # type: ignore[arg-type]
        pass
    assert kafka.committed == 3
    held_on_web = queue.take("ben")  # a reviewer has the first item open in a browser
    assert held_on_web is not None
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        "".join(json.dumps({"criterion_id": ev.cid(i), "label": "YES"}) + "\n" for i in range(3))
    )
    output = io.StringIO()
    async with StoreReviewIO(kafka, queue, "ann") as shared:  # type: ignore[arg-type]
        stats = await review_loop(
            shared,
            shared,
            ScriptedLabeler.from_file(labels),
            output,
            reviewer="ann",
            idle_timeout_s=0.5,
            poll_s=0.1,
        )
    # The terminal never saw the item the browser holds; it labelled the two others.
    assert sorted(stats.labels) == [ev.cid(1), ev.cid(2)]
    assert ev.cid(0) not in output.getvalue()
    assert sorted(r.criterion_id for r in kafka.published) == [ev.cid(1), ev.cid(2)]
    assert all(r.reviewer == "ann" and r.label == pb.LABEL_YES for r in kafka.published)
    assert queue.unpublished() == []


async def test_a_terminal_skip_gives_the_item_back_to_the_queue(tmp_path: Path) -> None:
    ev = Events(case_id="nutrition-skip", n=1)
    kafka = FakeKafka([ev.abstain(0)])
    queue = ReviewQueue(open_store(f"sqlite:///{tmp_path / 'q.db'}"))
    source = StoreReviewIO(kafka, queue, "ann")  # type: ignore[arg-type]
    async with source:
        first = await source.next(0.0)
        assert first is not None
        assert queue.take("ben") is None  # leased to the terminal
        assert await source.next(0.0) is None  # skipped: not offered again this session
    assert queue.take("ben") is not None  # and back for everybody else


def test_reag_review_web_refuses_to_bind_beyond_localhost_without_tokens() -> None:
    cli = typer.Typer()
    cli.callback()(lambda: None)
    review_cli.register(cli)
    out = CliRunner().invoke(cli, ["review", "--web", "--host", "0.0.0.0", "--port", "1"])
    assert out.exit_code == 2
    assert "refusing to listen on 0.0.0.0 without reviewer tokens" in out.output
