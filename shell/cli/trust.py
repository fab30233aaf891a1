"""``reag trust``: is the calibration's promise still kept on live traffic?

Reads the SQL store (``REAG_STORE_DSN``, or SQLite under ``REAG_STATE_DIR``)
like ``reag results``, so it works with no service running. Per tier and for
the whole accepted set: audits this epoch (since the thresholds in force were
computed), disagreements, the anytime-valid upper bound against α, the state
(insufficient / within / exceeded) and the drift tests (reag.trust).
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Annotated, Any

import typer

from reag.fit_defaults import DEFAULT_ALPHA, DEFAULT_DELTA

if TYPE_CHECKING:
    from reag.trust.monitor import TrustReport


def _as_dict(report: TrustReport) -> dict[str, Any]:
    def num(x: float) -> float | None:
        return None if math.isnan(x) else round(x, 6)

    return {
        "app": report.app,
        "epoch_started": report.epoch_started,
        "tiers": report.n_tiers,
        "audits": report.audits,
        "audits_abstained": report.abstained,
        "calibration_items": report.calibration_items,
        "reviewed_abstentions_not_in_risk_estimate": report.reviewed_abstentions,
        "risk": {
            name: {
                "audits": r.audits,
                "disagreements": r.disagreements,
                "risk": num(r.risk),
                "bound": num(r.bound),
                "alpha": r.alpha,
                "delta": r.delta,
                "state": r.state,
                "insufficient": r.insufficient,
                "detector": num(r.detector),
                "alarmed_at_audit": r.alarmed_at,
            }
            for name, r in report.risks.items()
        },
        "drift": {
            str(t): {
                "live": d.live,
                "calibration": d.calibration,
                **{
                    kind: {
                        "alarm": d.alarmed(kind),
                        "looks": len(d.checks.get(kind, [])),
                        "last_p": num(last.p_value) if (last := d.last(kind)) else None,
                        "last_level": num(last.level) if last else None,
                    }
                    for kind in ("confidence", "persona", "criterion_type")
                },
            }
            for t, d in report.drift.items()
        },
    }


def _print(report: TrustReport) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    title = f"{report.app}: {report.audits} audits this epoch"
    if report.epoch_started:
        title += f" (thresholds of {report.epoch_started})"
    table = Table(title=title)
    for column in ("tier", "audits", "disagree", "risk", "bound", "α", "state"):
        table.add_column(column)
    for name, r in report.risks.items():
        risk = "-" if math.isnan(r.risk) else f"{r.risk:.3f}"
        table.add_row(
            name,
            str(r.audits),
            str(r.disagreements),
            risk,
            f"{r.bound:.3f}",
            f"{r.alpha:.3f}",
            r.state,
        )
    console.print(table)
    drift = Table(title="drift from the calibration set (scheduled looks, δ split)")
    for column in ("tier", "live", "calibration", "confidence", "persona", "criterion type"):
        drift.add_column(column)
    for t, d in report.drift.items():
        cells = []
        for kind in ("confidence", "persona", "criterion_type"):
            last = d.last(kind)
            if last is None:
                cells.append("no look yet")
            else:
                state = "ALARM" if d.alarmed(kind) else "ok"
                cells.append(f"{state} (p={last.p_value:.3g} vs {last.level:.3g})")
        drift.add_row(str(t), str(d.live), str(d.calibration), *cells)
    console.print(drift)
    console.print(
        f"{report.abstained} audits no tier would accept; "
        f"{report.reviewed_abstentions} reviewed abstentions kept for the annotators' "
        "examples, never in the risk estimate.",
    )


def trust(
    *,
    app_name: Annotated[
        str | None, typer.Option("--app", help="Only this app (default: every audited app).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document.")] = False,
    store_dsn: Annotated[
        str | None,
        typer.Option("--store", help="SQLAlchemy URL (default: REAG_STORE_DSN or SQLite)."),
    ] = None,
    alpha: Annotated[
        float, typer.Option("--alpha", help="α for apps with no thresholds yet.")
    ] = DEFAULT_ALPHA,
    delta: Annotated[
        float, typer.Option("--delta", help="δ for apps with no thresholds yet.")
    ] = DEFAULT_DELTA,
) -> None:
    """Show per tier and overall: audits, disagreements, the live risk bound vs α, its state
    (insufficient / within / exceeded) and drift from the calibration set."""
    from reag.calibration.store import CalibrationStore
    from reag.settings import ReagSettings
    from reag.trust.from_store import app_report
    from reag.trust.store import AuditStore

    store = CalibrationStore.open(store_dsn or ReagSettings().resolved_store_dsn())
    audits = AuditStore(store.sessions)
    apps = [app_name] if app_name else sorted({*audits.apps(), *store.apps()})
    if not apps:
        typer.echo("no app has calibration items or audits in this store", err=True)
        raise typer.Exit(1)
    reports = [app_report(store, audits, a, alpha=alpha, delta=delta) for a in apps]
    if as_json:
        typer.echo(json.dumps([_as_dict(r) for r in reports], indent=2))
        return
    for report in reports:
        _print(report)


def register(app: typer.Typer) -> None:
    app.command("trust")(trust)
