"""Results for people (a terminal table, a Markdown report) and for machines (JSON).

The Markdown report states cost the honest way (every tier that ran is
charged) and prints the deciding-tier-only figure beside it, labelled as the
understated accounting, so nobody has to wonder which one they are reading.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.protobuf.json_format import MessageToDict

from reag.ledger.outcome import is_reviewed, reviewer_of
from reag.ledger.summary import (
    LABEL_NAMES,
    deciding_tier_cost,
    machine_attempts,
    outcome_name,
    pending_cases,
    reviewed_criteria,
    summarize,
)
from reag.v1 import api_pb2
from reag.v1 import events_pb2 as pb

_TEXT_WIDTH = 60


def result_to_dict(result: pb.Result) -> dict[str, Any]:
    return MessageToDict(result, preserving_proto_field_name=True)


def summary_to_dict(summary: api_pb2.Summary) -> dict[str, Any]:
    return MessageToDict(
        summary, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )


def _short(text: str, width: int = _TEXT_WIDTH) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def criterion_status(criterion: pb.CriterionResult) -> str:
    if is_reviewed(criterion):
        return f"reviewed by {reviewer_of(criterion)}"
    if criterion.accepted:
        return "accepted, provisional" if criterion.provisional else "accepted"
    if criterion.abstained:
        return "abstained, awaiting review"
    return "pending"


def _tiers_used(result: pb.Result) -> str:
    tiers = sorted({a.tier for c in result.criteria for a in machine_attempts(c)})
    return ",".join(str(t) for t in tiers) or "-"


def _decided(result: pb.Result) -> int:
    return sum(c.label != pb.LABEL_UNSPECIFIED for c in result.criteria)


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    out = [line.rstrip()]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return out


def criterion_lines(result: pb.Result, indent: str = "    ") -> list[str]:
    lines: list[str] = []
    for c in result.criteria:
        tier = f"tier {c.tier}" if c.tier else "no tier"
        lines.append(
            f"{indent}{c.criterion.criterion_id}  {LABEL_NAMES.get(c.label, '-'):<3}  {tier}  "
            f"conf {c.confidence:.3f}  ${c.cost_usd:.6f}  {criterion_status(c)}"
        )
        if c.criterion.text:
            lines.append(f"{indent}  {_short(c.criterion.text, 90)}")
        if c.criterion.source_doc_ids:
            lines.append(f"{indent}  from {', '.join(c.criterion.source_doc_ids)}")
        for attempt in machine_attempts(c):
            threshold = f"{attempt.threshold:.3f}" if attempt.has_threshold else "none"
            lines.append(
                f"{indent}  · tier {attempt.tier} {attempt.model or '?'}: "
                f"{LABEL_NAMES.get(attempt.verdict, '-')} conf {attempt.confidence:.3f} "
                f"threshold {threshold} ${attempt.cost_usd:.6f}"
                f"{' accepted' if attempt.accepted else ''}"
            )
    return lines


def format_table(results: Sequence[pb.Result], *, detail: bool = False) -> str:
    if not results:
        return "no results"
    headers = ("CASE", "APP", "RUN", "OUTCOME", "DECIDED", "OPEN", "TIERS", "COST_USD")
    rows = [
        (
            r.meta.case_id,
            r.meta.app,
            r.meta.run_id or "-",
            outcome_name(r) + (" (provisional)" if r.provisional else ""),
            f"{_decided(r)}/{len(r.criteria)}",
            str(len(r.open_criteria)),
            _tiers_used(r),
            f"{r.total_cost_usd:.6f}",
        )
        for r in results
    ]
    table = _table(headers, rows)
    if not detail:
        return "\n".join(table)
    lines = [table[0]]
    for row_line, result in zip(table[1:], results, strict=True):
        lines.append(row_line)
        lines += criterion_lines(result)
    return "\n".join(lines)


def format_summary(summary: api_pb2.Summary) -> str:
    pending = pending_cases(summary)
    return (
        f"{summary.cases} cases: {summary.passed} PASS, {summary.failed} FAIL, "
        f"{summary.abstained} ABSTAIN, {pending} pending; coverage {summary.coverage:.1%} "
        f"({summary.criteria_accepted}/{summary.criteria} criteria accepted by a judge); "
        f"cost ${summary.total_cost_usd:.6f} (every tier that ran)"
    )


def _md_escape(text: str) -> str:
    return _short(text, 120).replace("|", "\\|")


def _rate(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "n/a"


def markdown_report(results: Sequence[pb.Result], *, title: str = "reag results") -> str:
    summary = summarize(results)
    pending = pending_cases(summary)
    honest = summary.total_cost_usd
    deciding = deciding_tier_cost(results)
    out = [f"# {title}", "", "## Summary", ""]
    out += [
        "| cases | PASS | FAIL | ABSTAIN | pending | criteria | accepted by a judge "
        "| reviewed | coverage |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {summary.cases} | {summary.passed} | {summary.failed} | {summary.abstained} "
        f"| {pending} | {summary.criteria} | {summary.criteria_accepted} "
        f"| {reviewed_criteria(results)} | {summary.coverage:.1%} |",
        "",
        "Coverage is the share of criteria that left the cascade with a judge's accepted "
        "verdict; the rest were abstained to human review. Pending cases still wait for "
        "some criterion to leave the cascade.",
        "",
        "## Judge tiers",
        "",
        "| tier | requests | accepted | escalated | abstained | acceptance | cost (USD) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    out += [
        f"| {t.tier} | {t.requests} | {t.accepted} | {t.escalated} | {t.abstained} "
        f"| {_rate(t.accepted, t.requests)} | {t.cost_usd:.6f} |"
        for t in summary.tiers
    ]
    if not summary.tiers:
        out.append("| - | 0 | 0 | 0 | 0 | n/a | 0 |")
    out += [
        "",
        "## Cost",
        "",
        f"- Total: **${honest:.6f}**, charging every tier that ran for each criterion "
        "(a criterion decided at tier 3 paid for tiers 1, 2 and 3).",
        f"- Charging only the deciding tier would report ${deciding:.6f}; that figure "
        "understates what was spent and is shown for comparison only.",
    ]
    if summary.cases:
        out.append(f"- Per case: ${honest / summary.cases:.6f}.")
    out += [
        "",
        "## Cases",
        "",
        "| case | app | run | outcome | decided | open criteria | tiers | cost (USD) |",
        "|---|---|---|---|---:|---|---|---:|",
    ]
    out += [
        f"| {r.meta.case_id} | {r.meta.app} | {r.meta.run_id or '-'} | {outcome_name(r)}"
        f"{' (provisional)' if r.provisional else ''} "
        f"| {_decided(r)}/{len(r.criteria)} | {', '.join(r.open_criteria) or '-'} "
        f"| {_tiers_used(r)} | {r.total_cost_usd:.6f} |"
        for r in results
    ]
    failing = [r for r in results if r.outcome in (pb.OUTCOME_FAIL, pb.OUTCOME_ABSTAIN)]
    if failing:
        out += ["", "## Failed and abstained criteria", ""]
        for r in failing:
            for c in r.criteria:
                if c.label == pb.LABEL_NO or c.criterion.criterion_id in r.open_criteria:
                    out.append(
                        f"- `{c.criterion.criterion_id}` ({outcome_name(r)}, "
                        f"{criterion_status(c)}): {_md_escape(c.criterion.text)}"
                    )
    return "\n".join(out) + "\n"
