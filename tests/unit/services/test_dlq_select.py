"""``reag dlq``'s filters and what a listing may show, without a broker."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import typer

from reag.v1 import events_pb2 as pb
from shell.cli.dlq import details, parse_since, summary
from shell.kafka_io.dlq import StoredLetter, app_of, select

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def stored(offset: int, error_type: str, app: str, minutes_ago: int) -> StoredLetter:
    event = pb.Traffic(query="my private question", actual_response="r")
    event.meta.case_id, event.meta.app, event.meta.schema_version = f"case-{offset}", app, 1
    letter = pb.DeadLetter(
        service="elicitor",
        topic="reag.traffic.v1",
        partition=0,
        offset=offset,
        key=f"case-{offset}".encode(),
        value=event.SerializeToString(),
        headers={"content-type": "application/x-protobuf", "x-user-note": "secret"},
        reason="why",
        error_type=error_type,
    )
    letter.failed_at.FromDatetime(NOW - timedelta(minutes=minutes_ago))
    return StoredLetter(0, offset, letter, app_of(letter), len(letter.value))


def test_since_takes_durations_and_times() -> None:
    assert parse_since("30m", NOW) == NOW - timedelta(minutes=30)
    assert parse_since("2h", NOW) == NOW - timedelta(hours=2)
    assert parse_since("7d", NOW) == NOW - timedelta(days=7)
    assert parse_since("2026-12-01T10:00:00") == datetime(2026, 12, 1, 10, tzinfo=UTC)
    assert parse_since(None) is None
    with pytest.raises(typer.Exit):
        parse_since("yesterday")


def test_letters_are_selected_by_reason_time_and_app() -> None:
    letters = [
        stored(1, "app_not_loaded", "late", 5),
        stored(2, "undecodable", "demo", 5),
        stored(3, "app_not_loaded", "demo", 300),
    ]
    assert [s.app for s in letters] == ["late", "demo", "demo"]  # read from the event's meta
    assert [s.offset for s in select(letters, reason="app_not_loaded")] == [1, 3]
    recent = select(letters, since=NOW - timedelta(hours=1))
    assert [s.offset for s in recent] == [1, 2]
    assert [s.offset for s in select(letters, app="demo", reason="app_not_loaded")] == [3]


def test_a_listing_shows_the_payload_by_size_only() -> None:
    letter = stored(1, "app_not_loaded", "late", 5)
    shown = str(summary(letter)) + str(details(letter))
    assert "my private question" not in shown
    assert "secret" not in shown  # a header that may carry user data: its size only
    assert details(letter)["headers"]["content-type"] == "application/x-protobuf"
    assert summary(letter)["size_bytes"] == len(letter.letter.value)
