"""Reading logs into live exchanges: field maps, both formats, and bad rows that cost
only themselves and are reported without their content."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from reag.traffic.live import to_traffic
from reag.traffic.replay import (
    FieldMap,
    ReplayError,
    ReplayRow,
    RowError,
    detect_format,
    lookup,
    replay,
)
from reag.v1 import events_pb2 as pb

SECRET = "jane.doe@example.com"
MAPS = [
    "query=input.question",
    "response=output.text",
    "user_id=user.id",
    "profile.diet=meta.diet",
    "profile.tags=meta.tags",
    "latency_ms=timing.ms",
]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def outcomes(path: Path, maps: list[str], fmt: str | None = None) -> list[ReplayRow | RowError]:
    return list(replay(path, FieldMap.parse(maps), detect_format(path, fmt)))


def test_a_field_map_replaces_defaults_and_collects_profile_attributes() -> None:
    fields = FieldMap.parse(MAPS)
    assert fields.fields["query"] == "input.question"
    assert fields.fields["request_id"] == "request_id"  # default kept
    assert fields.attributes == {"diet": "meta.diet", "tags": "meta.tags"}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("query", "FIELD=PATH"),
        ("=x", "FIELD=PATH"),
        ("answer=x", "unknown field 'answer'"),
        ("profile.=x", "attribute name"),
    ],
)
def test_bad_maps_are_refused_with_the_fix(spec: str, message: str) -> None:
    with pytest.raises(ReplayError, match=message):
        FieldMap.parse([spec])


def test_the_format_comes_from_the_extension_or_the_option(tmp_path: Path) -> None:
    assert detect_format(Path("a.jsonl")) == "jsonl"
    assert detect_format(Path("a.NDJSON")) == "jsonl"
    assert detect_format(Path("a.csv")) == "csv"
    assert detect_format(Path("a.log"), "csv") == "csv"
    with pytest.raises(ReplayError, match="--format"):
        detect_format(Path("a.log"))
    with pytest.raises(ReplayError, match="jsonl or csv"):
        detect_format(Path("a.csv"), "xml")


def test_lookup_walks_objects_and_lists_and_prefers_a_whole_key() -> None:
    row = {"a": {"b": [{"c": 1}, {"c": 2}]}, "x.y": "flat"}
    assert lookup(row, "a.b.1.c") == 2
    assert lookup(row, "a.b.-1.c") == 2
    assert lookup(row, "x.y") == "flat"
    assert lookup(row, "a.b.5.c") is lookup(row, "nope")


def test_jsonl_rows_map_to_exchanges(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "log.jsonl",
        '{"input": {"question": "Is cola OK?"}, "output": {"text": "No."}, "user": {"id": 17},'
        ' "meta": {"diet": "renal", "tags": ["a", "b"]}, "timing": {"ms": 420}}\n',
    )
    [row] = outcomes(path, MAPS)
    assert isinstance(row, ReplayRow)
    assert row.line == 1
    ex = row.exchange
    assert (ex.query, ex.response, ex.user_id) == ("Is cola OK?", "No.", "17")
    assert ex.latency_s == pytest.approx(0.42)
    assert dict(ex.attributes) == {"diet": "renal", "tags": '["a","b"]'}
    assert ex.request_id.startswith("replay-")
    event = to_traffic(ex, "nutrition")
    assert event.meta.origin == pb.ORIGIN_LIVE
    assert event.profile.attributes["diet"] == "renal"


def test_a_row_without_a_request_id_gets_one_fixed_by_its_content(tmp_path: Path) -> None:
    line = '{"query": "q", "response": "r"}\n'
    path = write(tmp_path, "log.jsonl", line + line + '{"query": "q2", "response": "r"}\n')
    rows = [o for o in outcomes(path, []) if isinstance(o, ReplayRow)]
    ids = [row.exchange.request_id for row in rows]
    assert ids[0] == ids[1] != ids[2]
    cases = [to_traffic(row.exchange, "a").meta.case_id for row in rows]
    assert cases[0] == cases[1] != cases[2]


def test_bad_rows_are_reported_by_line_and_never_quote_the_row(tmp_path: Path) -> None:
    lines = [
        f'{{"query": "ok {SECRET}", "response": "fine"}}',  # 1: valid
        f'{{"query": "{SECRET}", "response": ',  # 2: not JSON
        f'["{SECRET}"]',  # 3: not an object
        f'{{"query": {{"text": "{SECRET}"}}, "response": "r"}}',  # 4: query is an object
        f'{{"query": "{SECRET}"}}',  # 5: no response
        f'{{"query": "{SECRET}", "response": "r", "latency_s": "{SECRET}"}}',  # 6
        f'{{"query": "{SECRET}", "response": "r", "latency_s": -1}}',  # 7
        "",  # 8: blank lines are skipped
        f'{{"query": "   ", "response": "{SECRET}"}}',  # 9: empty query
        f'{{"query": "q", "response": "r", "created_at": "{SECRET}"}}',  # 10
    ]
    path = tmp_path / "log.jsonl"
    path.write_bytes(("\n".join(lines) + "\n").encode() + b'{"query": "\xff"}\n')
    results = outcomes(path, ["created_at=created_at"])
    errors = [o for o in results if isinstance(o, RowError)]
    assert [o.line for o in results if isinstance(o, ReplayRow)] == [1]
    assert [e.line for e in errors] == [2, 3, 4, 5, 6, 7, 9, 10, 11]
    reasons = [e.reason for e in errors]
    assert reasons[0].startswith("not JSON")
    assert reasons[1] == "the row is a list, not an object"
    assert reasons[2] == "query at 'query' is an object, not text"
    assert reasons[3] == "no response at 'response'"
    assert "not a number" in reasons[4]
    assert "non-negative" in reasons[5]
    assert reasons[6] == "no query at 'query'"
    assert "ISO 8601" in reasons[7]
    assert reasons[8] == "the line is not UTF-8 text"
    for reason in reasons:
        assert "jane" not in reason
        assert "example" not in reason


def test_csv_columns_by_name(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "log.csv",
        "question,answer,uid,ts,diet\n"
        '"Is cola OK?","No, it has sugar.",u1,2026-11-30T10:00:00Z,renal\n'
        "no answer here,,u2,,\n"
        "a,b,c,d,e,f\n"
        "What about tea?,Fine.,u3,1764496800000,\n",
    )
    maps = [
        "query=question",
        "response=answer",
        "user_id=uid",
        "created_at=ts",
        "profile.diet=diet",
    ]
    results = outcomes(path, maps)
    rows = [o for o in results if isinstance(o, ReplayRow)]
    errors = [o for o in results if isinstance(o, RowError)]
    assert [r.line for r in rows] == [2, 5]
    assert rows[0].exchange.response == "No, it has sugar."
    assert rows[0].exchange.created_at == datetime(2026, 11, 30, 10, tzinfo=UTC).timestamp()
    assert dict(rows[0].exchange.attributes) == {"diet": "renal"}
    assert rows[1].exchange.created_at == 1764496800.0  # milliseconds read as such
    assert dict(rows[1].exchange.attributes) == {}
    assert [(e.line, e.reason) for e in errors] == [
        (3, "no response at 'answer'"),
        (4, "1 more fields than the header has"),
    ]


def test_an_unreadable_file_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(ReplayError, match="cannot read"):
        outcomes(tmp_path / "missing.jsonl", [])
