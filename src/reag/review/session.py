"""The review loop: one abstained criterion at a time, a label published for each decision.

Blind: the tiers' verdicts and confidences are shown only once the label is
published (``reag.review.render``); a skipped case never shows them.

Kafka-free: items come from an ``AbstainSource`` and labels go to a
``ReviewSink`` (``shell/kafka_io/review.py`` implements both over Kafka;
tests use lists). The source is told to commit only after a label has been
published, so a crash or a quit never loses a case: the next session starts
at the first item that has no published label behind it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol, TextIO

from google.protobuf.message import DecodeError

from reag.review.labels import Labeler
from reag.review.render import LABELS, render_case, render_judges
from reag.v1 import events_pb2 as pb


@dataclass(frozen=True, slots=True)
class SourceItem:
    """One record off the abstain topic; ``where`` names it for messages (never its payload)."""

    value: bytes
    where: str
    handle: object = None


class AbstainSource(Protocol):
    async def next(self, timeout_s: float) -> SourceItem | None:
        """The next record, or None when none arrived within ``timeout_s``."""
        ...

    async def commit(self, item: SourceItem) -> None:
        """Mark ``item`` and everything before it as done for this reviewer group."""
        ...


class ReviewSink(Protocol):
    async def publish(self, review: pb.Review) -> None: ...


@dataclass(slots=True)
class ReviewStats:
    shown: int = 0
    labelled: int = 0
    skipped: int = 0
    unreadable: int = 0
    repeated: int = 0
    stopped_by: str = ""
    labels: dict[str, int] = field(default_factory=dict)  # criterion id -> pb.Label


def build_review(
    abstain: pb.Abstain,
    label: pb.Label.ValueType,
    *,
    reviewer: str,
    comment: str = "",
    now: datetime | None = None,
) -> pb.Review:
    """The label with what was reviewed (``item``), so calibration can reuse it as is."""
    review = pb.Review(
        criterion_id=abstain.request.criterion.criterion_id,
        label=label,
        reviewer=reviewer,
        comment=comment,
    )
    review.meta.CopyFrom(abstain.meta)
    review.meta.ClearField("created_at")
    stamp = now or datetime.now(UTC)
    review.meta.created_at.FromDatetime(stamp)
    review.reviewed_at.FromDatetime(stamp)
    review.item.CopyFrom(abstain.request)
    return review


def decode_abstain(value: bytes) -> pb.Abstain | None:
    """The record as an Abstain, or None when it is not one a reviewer can label."""
    try:
        abstain = pb.Abstain.FromString(value)
    except (DecodeError, ValueError):
        return None
    if not abstain.request.criterion.criterion_id or not abstain.meta.case_id:
        return None
    return abstain


class _Session:
    def __init__(
        self,
        source: AbstainSource,
        sink: ReviewSink,
        labeler: Labeler,
        output: TextIO,
        reviewer: str,
    ) -> None:
        self.source, self.sink, self.labeler = source, sink, labeler
        self.output, self.reviewer = output, reviewer
        self.stats = ReviewStats()

    def say(self, text: str) -> None:
        self.output.write(text + "\n")
        self.output.flush()

    async def handle(self, item: SourceItem) -> bool:
        """Show one record and act on the decision; False when the reviewer quits."""
        stats = self.stats
        abstain = decode_abstain(item.value)
        if abstain is None:
            stats.unreadable += 1
            self.say(f"skipped {item.where}: not a readable Abstain event")
            return True
        criterion_id = abstain.request.criterion.criterion_id
        if criterion_id in stats.labels:
            stats.repeated += 1
            self.say(f"skipped {criterion_id}: already labelled in this session")
            return True
        stats.shown += 1
        self.say(render_case(abstain, position=stats.shown))
        decision = await self.labeler.decide(abstain)
        if decision.action == "quit":
            return False
        if decision.action == "skip":
            stats.skipped += 1
            self.say(f"skipped {criterion_id}")
            return True
        review = build_review(
            abstain, decision.label, reviewer=self.reviewer, comment=decision.comment
        )
        await self.sink.publish(review)
        await self.source.commit(item)
        stats.labelled += 1
        stats.labels[criterion_id] = decision.label
        self.say(f"labelled {criterion_id} {LABELS.get(decision.label, '?')} as {self.reviewer}")
        self.say(render_judges(abstain))
        return True


async def review_loop(
    source: AbstainSource,
    sink: ReviewSink,
    labeler: Labeler,
    output: TextIO,
    *,
    reviewer: str,
    max_labels: int | None = None,
    idle_timeout_s: float | None = None,
    poll_s: float = 1.0,
    clock: Callable[[], float] = time.monotonic,
) -> ReviewStats:
    """Review until quit, ``max_labels`` published, the labeller has nothing left, or no
    abstain arrives for ``idle_timeout_s`` (None: wait for ever); time spent deciding
    is not idle time."""
    session = _Session(source, sink, labeler, output, reviewer)
    stats = session.stats
    last_seen = clock()
    while True:
        if max_labels is not None and stats.labelled >= max_labels:
            stats.stopped_by = "max"
            break
        if labeler.finished():
            stats.stopped_by = "labels used up"
            break
        wait = poll_s
        if idle_timeout_s is not None:
            left = idle_timeout_s - (clock() - last_seen)
            if left <= 0:
                stats.stopped_by = "timeout"
                break
            wait = min(poll_s, left)
        item = await source.next(wait)
        if item is None:
            continue
        going_on = await session.handle(item)
        last_seen = clock()
        if not going_on:
            stats.stopped_by = "quit"
            break
    session.say(
        f"done ({stats.stopped_by}): {stats.labelled} labelled, {stats.skipped} skipped, "
        f"{stats.unreadable} unreadable"
    )
    return stats
