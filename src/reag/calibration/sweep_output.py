"""Writing a sweep out: CSV for tools, Markdown for people, PNG plots for both."""

from __future__ import annotations

import csv
from pathlib import Path

from reag.calibration.sweep import Agreement, JudgeSelectiveRow, SweepResult

CSV_NAME = "sweep.csv"
MARKDOWN_NAME = "sweep.md"

CSV_COLUMNS = (
    "row", "system", "alpha", "n", "coverage",
    "selective_agreement", "selective_ci_low", "selective_ci_high", "accepted",
    "full_agreement", "full_ci_low", "full_ci_high",
    "tier_pct", "abstain_pct", "cost_unit", "cost_per_100", "cpp",
    "deciding_tier_cost_per_100", "deciding_tier_cpp", "thresholds", "temperatures",
)  # fmt: skip


def _num(value: float | None, digits: int = 4) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _agreement_cells(agreement: Agreement) -> tuple[str, str, str]:
    low, high = agreement.interval
    return _num(agreement.rate), _num(low), _num(high)


def write_csv(result: SweepResult, path: Path) -> None:
    """One long table; ``row`` says which kind, and selective and full-set columns never mix."""
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for r in result.cascade:
            rate, low, high = _agreement_cells(r.selective)
            writer.writerow({
                "row": "cascade", "system": f"cascade ({result.mode})", "alpha": r.alpha,
                "n": r.n, "coverage": _num(r.coverage), "selective_agreement": rate,
                "selective_ci_low": low, "selective_ci_high": high, "accepted": r.selective.n,
                "tier_pct": "/".join(f"{p:.1f}" for p in r.tier_pct),
                "abstain_pct": f"{r.abstain_pct:.1f}", "cost_unit": result.cost_unit,
                "cost_per_100": _num(r.cost_per_100), "cpp": _num(r.cpp),
                "deciding_tier_cost_per_100": _num(r.deciding_cost_per_100),
                "deciding_tier_cpp": _num(r.deciding_cpp),
                "thresholds": "/".join("none" if t is None else f"{t:g}" for t in r.thresholds),
                "temperatures": "/".join(f"{t:g}" for t in r.temperatures),
            })  # fmt: skip
        for j in result.judges_full:
            rate, low, high = _agreement_cells(j.full)
            writer.writerow({
                "row": "judge_full_set", "system": f"J{j.tier} alone", "n": j.full.n,
                "full_agreement": rate, "full_ci_low": low, "full_ci_high": high,
                "cost_unit": result.cost_unit, "cost_per_100": _num(j.cost_per_100),
                "cpp": _num(j.cpp),
            })  # fmt: skip
        for s in result.judges_selective:
            rate, low, high = _agreement_cells(s.selective)
            writer.writerow({
                "row": "judge_selective", "system": f"J{s.tier} alone", "alpha": s.alpha,
                "n": result.n_evaluation, "coverage": _num(s.coverage),
                "selective_agreement": rate, "selective_ci_low": low, "selective_ci_high": high,
                "accepted": s.selective.n, "cost_unit": result.cost_unit,
                "cost_per_100": _num(s.cost_per_100), "cpp": _num(s.cpp),
                "thresholds": "none" if s.threshold is None else f"{s.threshold:g}",
                "temperatures": f"{s.temperature:g}",
            })  # fmt: skip


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100.0 * value:.1f}%"


def _agreement_md(agreement: Agreement) -> str:
    if agreement.rate is None:
        return "– (0 accepted)"
    low, high = agreement.interval
    return f"{_pct(agreement.rate)} [{_pct(low)}, {_pct(high)}] ({agreement.n})"


def _cost_md(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _selective_cell(row: JudgeSelectiveRow) -> str:
    lam = "none" if row.threshold is None else f"{row.threshold:.3f}"
    if row.temperature != 1.0:
        lam += f" (T={row.temperature:g})"
    return (
        f"{lam} · {_pct(row.coverage)} · {_agreement_md(row.selective)} · CPP {_cost_md(row.cpp)}"
    )


def markdown(result: SweepResult) -> str:
    unit = "USD" if result.cost_unit == "usd" else "relative units"
    tiers = " / ".join(f"J{t}" for t in range(1, result.n_tiers + 1))
    lines = [
        f"# α sweep: cascade ({result.mode} mode), δ = {result.delta:g}, τ = {result.tau}, "
        f"min accepted = {result.min_accepted}",
        "",
        f"Calibrated on {result.n_calibration} items (hash {result.calibration_hash[:12]}), "
        f"measured on {result.n_evaluation} other items. Costs are per 100 items in {unit}; "
        "**cost** charges every call made (an item decided at tier t paid tiers 1..t, an "
        "abstained one paid every tier); *deciding-tier* cost charges only the last tier "
        "reached, as the paper's table 3 did, and is shown only for comparison. "
        "CPP = cost per 100 items / agreement in %. Agreement intervals are exact 95 % "
        "Clopper–Pearson; the count in brackets is the number of verdicts measured.",
        "",
        f"| α | coverage | selective agreement [95% CI] (accepted) | {tiers} / abstain % "
        "| cost | CPP | deciding-tier cost | deciding-tier CPP | λ̂ per tier |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result.cascade:
        dist = " / ".join(f"{p:.1f}" for p in (*r.tier_pct, r.abstain_pct))
        thresholds = " / ".join("none" if t is None else f"{t:.3f}" for t in r.thresholds)
        scaled = [f"T{i}={t:g}" for i, t in enumerate(r.temperatures, start=1) if t != 1.0]
        if scaled:
            thresholds += f" ({', '.join(scaled)})"
        lines.append(
            f"| {r.alpha:.2f} | {_pct(r.coverage)} | {_agreement_md(r.selective)} | {dist} "
            f"| {r.cost_per_100:.1f} | {_cost_md(r.cpp)} | {r.deciding_cost_per_100:.1f} "
            f"| {_cost_md(r.deciding_cpp)} | {thresholds} |"
        )
    if result.judges_full:
        lines += [
            "",
            "## Each judge alone, full set (every item judged, every verdict counted)",
            "",
            "| judge | agreement [95% CI] (n) | cost | CPP |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| J{j.tier} | {_agreement_md(j.full)} | {j.cost_per_100:.1f} | {_cost_md(j.cpp)} |"
            for j in result.judges_full
        ]
    if result.judges_selective:
        judges = sorted({s.tier for s in result.judges_selective})
        by_key = {(s.alpha, s.tier): s for s in result.judges_selective}
        lines += [
            "",
            "## Each judge alone, selective (its own calibrated threshold; it still pays for "
            "every item, so its cost is the full-set cost above)",
            "",
            "Each cell: λ̂, coverage, selective agreement [95% CI] (accepted), CPP.",
            "",
            "| α | " + " | ".join(f"J{t}" for t in judges) + " |",
            "|---|" + "---|" * len(judges),
        ]
        for alpha in dict.fromkeys(s.alpha for s in result.judges_selective):
            cells = [_selective_cell(by_key[alpha, t]) for t in judges]
            lines.append(f"| {alpha:.2f} | " + " | ".join(cells) + " |")
    if result.notes:
        lines += ["", *(f"- {note}" for note in result.notes)]
    return "\n".join(lines) + "\n"


def write_sweep(result: SweepResult, out_dir: Path) -> list[Path]:
    """Write sweep.csv, sweep.md and the plots into ``out_dir``; return the paths."""
    from reag.calibration.plots import write_plots

    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path, md_path = out_dir / CSV_NAME, out_dir / MARKDOWN_NAME
    write_csv(result, csv_path)
    md_path.write_text(markdown(result), encoding="utf-8")
    return [csv_path, md_path, *write_plots(result, out_dir)]
