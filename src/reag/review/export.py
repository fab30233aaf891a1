"""Every reviewer's label with its note, as JSONL or CSV, for people and other tools.

One row per label (not per item): who said what, when, with the item's resolved
label beside it. Notes are the reviewers' own words and the ids come from
traffic, so CSV cells that a spreadsheet would run as a formula (leading
``=``, ``+``, ``-``, ``@``, tab or carriage return) are prefixed with ``'``.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from reag.review.queue import LabelRecord

COLUMNS = (
    "app",
    "case_id",
    "criterion_id",
    "persona_category",
    "reason",
    "audit",
    "reviewer",
    "label",
    "note",
    "labelled_at",
    "resolved_label",
)


def _row(record: LabelRecord) -> dict[str, object]:
    return {
        "app": record.app,
        "case_id": record.case_id,
        "criterion_id": record.criterion_id,
        "persona_category": record.persona_category,
        "reason": record.reason_kind,
        "audit": record.audit,
        "reviewer": record.reviewer,
        "label": record.vote,
        "note": record.note,
        "labelled_at": record.labelled_at.isoformat(),
        "resolved_label": record.resolved_label or "",
    }


def to_jsonl(records: Sequence[LabelRecord]) -> str:
    return "".join(json.dumps(_row(r), ensure_ascii=False) + "\n" for r in records)


def _cell(value: object) -> str:
    text = str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def to_csv(records: Sequence[LabelRecord]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for record in records:
        row = _row(record)
        writer.writerow([_cell(row[column]) for column in COLUMNS])
    return out.getvalue()
