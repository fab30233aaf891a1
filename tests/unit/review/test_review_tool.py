"""The review tool's core with injected streams: rendering, prompting, label publishing."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from reag.review.labels import LabelFileError, ScriptedLabeler, TerminalLabeler
from reag.review.render import render_case, render_judges
from reag.review.session import SourceItem, build_review, review_loop
from reag.v1 import events_pb2 as pb
from tests.unit.ledger.conftest import NO, YES, Events


class ListSource:
    """Records in order, then nothing; remembers what was committed."""

    def __init__(self, values: list[bytes]) -> None:
        self.items = [SourceItem(v, f"abstains[0]@{i}", i) for i, v in enumerate(values)]
        self.committed: list[object] = []
        self.waited = 0.0

    async def next(self, timeout_s: float) -> SourceItem | None:
        if self.items:
            return self.items.pop(0)
        self.waited += timeout_s
        return None

    async def commit(self, item: SourceItem) -> None:
        self.committed.append(item.handle)


class ListSink:
    def __init__(self) -> None:
        self.reviews: list[pb.Review] = []

    async def publish(self, review: pb.Review) -> None:
        self.reviews.append(review)


class FakeClock:
    """Advances only when the source waits, so idle timeouts need no real time."""

    def __init__(self, source: ListSource) -> None:
        self.source = source

    def __call__(self) -> float:
        return self.source.waited


def abstains(n: int = 3) -> list[bytes]:
    ev = Events(n=n)
    return [ev.abstain(i).SerializeToString() for i in range(n)]


def test_render_shows_everything_a_reviewer_needs_and_no_judge_before_the_label() -> None:
    ev = Events()
    text = render_case(ev.abstain(1), position=4)
    for hint in ("confidence", "threshold", "tier 1", "Why it is here", "model-1", "audit", "$"):
        assert hint not in text
    assert "#4  case nutrition-0001 · criterion nutrition-0001/c1 (2 of 3)" in text
    assert "Criterion: The answer respects rule 1." in text
    assert "Persona: diabetic — Type 2 diabetic, cooks at home." in text
    assert "App response (untrusted, shown verbatim):\n  │ Pasta with cream." in text
    assert "User query (untrusted, shown verbatim):\n  │ What should I eat tonight?" in text
    assert '[requirement/r1] "Plans fit the diet." — rule' in text
    text = render_judges(ev.abstain(1))
    assert "tier 1 model-1: YES  confidence 0.700  threshold 0.900  $0.001000  → escalated" in text
    assert "tier 3 model-3: YES  confidence 0.900  threshold 0.900  $0.004600  → gave up" in text
    assert "Why it is here: no tier was confident" in text
    assert "$0.008600 (every tier that ran)" in text


def test_render_strips_terminal_control_sequences_from_untrusted_text() -> None:
    abstain = Events().abstain(0)
    abstain.request.actual_response = "fine\x1b[2J\x1b]0;pwned\x07\nline two\r\n"
    text = render_case(abstain)
    assert "\x1b" not in text
    assert "\x07" not in text
    assert "  │ fine[2J]0;pwned\n  │ line two" in text


async def test_terminal_session_publishes_labels_and_commits_after_each() -> None:
    source = ListSource(abstains(3))
    sink = ListSink()
    answers = io.StringIO("y\nlooks right\nmaybe\nn\n\nq\n")
    output = io.StringIO()
    stats = await review_loop(
        source, sink, TerminalLabeler(answers, output), output, reviewer="ann"
    )
    assert stats.stopped_by == "quit"
    assert [(r.criterion_id, r.label, r.comment) for r in sink.reviews] == [
        ("nutrition-0001/c0", YES, "looks right"),
        ("nutrition-0001/c1", NO, ""),
    ]
    assert source.committed == [0, 1]  # the third was shown, then quit: not committed
    text = output.getvalue()
    assert "'maybe' is not an answer" in text
    assert text.count("[y]es / [n]o / [s]kip / [q]uit") == 4
    assert "done (quit): 2 labelled, 0 skipped" in text
    # the judges appear only after each label, never for the case left unlabelled
    assert text.count("Judges (shown after your label):") == 2
    first_label = text.index("labelled nutrition-0001/c0")
    assert text.index("confidence 0.") > first_label


def test_audit_and_abstention_look_alike_before_the_label() -> None:
    plain = Events().abstain(1)
    audit = Events().abstain(1)
    audit.audit = True
    audit.reason = "audit: a random criterion every tier scored, for review"
    assert render_case(audit) == render_case(plain)
    assert "random audit" in render_judges(audit)


async def test_review_carries_the_reviewed_request_and_the_case_meta() -> None:
    ev = Events(n=1)
    sink = ListSink()
    await review_loop(
        ListSource(abstains(1)),
        sink,
        TerminalLabeler(io.StringIO("n\nwrong dish\n"), io.StringIO()),
        io.StringIO(),
        reviewer="bob",
        max_labels=1,
    )
    (review,) = sink.reviews
    assert review.item == ev.abstain(0).request  # history included, for calibration
    assert (review.meta.case_id, review.meta.app, review.meta.run_id) == (
        ev.case_id,
        ev.app,
        ev.run_id,
    )
    assert review.reviewer == "bob"
    assert review.HasField("reviewed_at")


async def test_skip_is_not_published_and_end_of_input_quits() -> None:
    source, sink = ListSource(abstains(2)), ListSink()
    stats = await review_loop(
        source,
        sink,
        TerminalLabeler(io.StringIO("s\n"), io.StringIO()),
        io.StringIO(),
        reviewer="ann",
    )
    assert (stats.skipped, stats.labelled, stats.stopped_by) == (1, 0, "quit")
    assert sink.reviews == []
    assert source.committed == []


async def test_max_and_idle_timeout_stop_the_loop() -> None:
    source, sink = ListSource(abstains(3)), ListSink()
    stats = await review_loop(
        source,
        sink,
        TerminalLabeler(io.StringIO("y\n\n" * 3), io.StringIO()),
        io.StringIO(),
        reviewer="ann",
        max_labels=2,
    )
    assert (stats.labelled, stats.stopped_by) == (2, "max")

    source = ListSource(abstains(1))
    stats = await review_loop(
        source,
        ListSink(),
        TerminalLabeler(io.StringIO("y\n\n"), io.StringIO()),
        io.StringIO(),
        reviewer="ann",
        idle_timeout_s=5.0,
        poll_s=1.0,
        clock=FakeClock(source),
    )
    assert (stats.labelled, stats.stopped_by) == (1, "timeout")
    assert source.waited == pytest.approx(5.0)


async def test_unreadable_records_and_repeats_are_skipped_with_a_note() -> None:
    values = abstains(1)
    source = ListSource([b"\xff\x00junk", values[0], values[0]])
    output = io.StringIO()
    stats = await review_loop(
        source,
        ListSink(),
        TerminalLabeler(io.StringIO("y\n\nq\n"), output),
        output,
        reviewer="ann",
        idle_timeout_s=1.0,
        clock=FakeClock(source),
    )
    assert (stats.unreadable, stats.repeated, stats.labelled) == (1, 1, 1)
    assert "skipped abstains[0]@0: not a readable Abstain event" in output.getvalue()
    assert "already labelled in this session" in output.getvalue()


async def test_labels_from_a_file_label_named_criteria_and_stop_when_used_up(
    tmp_path: Path,
) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text(
        json.dumps({"criterion_id": "nutrition-0001/c2", "label": "NO", "comment": "salty"})
        + "\n\n"
        + json.dumps({"criterion_id": "nutrition-0001/c0", "label": "yes"})
        + "\n"
    )
    source, sink = ListSource(abstains(3)), ListSink()
    stats = await review_loop(
        source, sink, ScriptedLabeler.from_file(path), io.StringIO(), reviewer="script"
    )
    assert [(r.criterion_id, r.label, r.comment) for r in sink.reviews] == [
        ("nutrition-0001/c0", YES, ""),
        ("nutrition-0001/c2", NO, "salty"),
    ]
    assert (stats.skipped, stats.stopped_by) == (1, "labels used up")
    assert source.committed == [0, 2]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json\n", "labels.jsonl:1: not JSON"),
        ('{"criterion_id": "c", "label": "maybe"}\n', "label must be YES or NO"),
        ('{"label": "YES"}\n', "each line needs"),
        ("\n", "holds no labels"),
    ],
)
def test_bad_label_files_say_where(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text(content)
    with pytest.raises(LabelFileError, match=message):
        ScriptedLabeler.from_file(path)
    with pytest.raises(LabelFileError, match="cannot read"):
        ScriptedLabeler.from_file(tmp_path / "missing.jsonl")


def test_build_review_stamps_time_and_keeps_the_abstain_meta() -> None:
    abstain = Events().abstain(2)
    review = build_review(abstain, YES, reviewer="ann", comment="ok")
    assert review.criterion_id == "nutrition-0001/c2"
    assert review.meta.schema_version == pb.SCHEMA_VERSION_1
    assert review.meta.created_at == review.reviewed_at
