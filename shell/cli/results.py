"""``reag results`` (list, detail, JSON, Markdown report) and ``reag gate`` (CI exit code).

Both read the ledger's SQL store directly (``REAG_STORE_DSN``, or SQLite under
``REAG_STATE_DIR``), so they work with no service running: a CI job can point
``--store`` at the production database and gate a run. With ``--api`` they
read the ledger's gRPC results API instead, for a CI job that may reach the
ledger but not its database: ``--token`` (better ``REAG_LEDGER_GRPC_TOKEN``,
since a command line is visible to other users) and ``--tls-ca`` / ``--tls``
match the ledger's ``REAG_LEDGER_GRPC_TOKEN`` and TLS settings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from reag.ledger.store import LedgerStore
    from reag.v1 import events_pb2 as pb

AppOption = Annotated[
    str | None, typer.Option("--app", help="Only this app's results (default: every app).")
]
RunOption = Annotated[
    str | None, typer.Option("--run-id", help="Only this run's results (default: every run).")
]
StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store", help="SQLAlchemy URL of the store (default: REAG_STORE_DSN or the SQLite file)."
    ),
]


ApiOption = Annotated[
    str | None,
    typer.Option(
        "--api",
        envvar="REAG_RESULTS_API",
        help="host:port of the ledger's gRPC results API, read instead of the store.",
    ),
]
TokenOption = Annotated[
    str | None,
    typer.Option(
        "--token",
        envvar="REAG_LEDGER_GRPC_TOKEN",
        help="Bearer token of the results API (prefer the environment variable).",
        show_default=False,
    ),
]
TlsCaOption = Annotated[
    Path | None,
    typer.Option(
        "--tls-ca",
        envvar="REAG_LEDGER_GRPC_TLS_CA",
        help="PEM root certificate that signed the API's TLS certificate (implies --tls).",
    ),
]
TlsOption = Annotated[
    bool, typer.Option("--tls", help="Reach the results API over TLS, with the system's roots.")
]
API_TIMEOUT_S = 30.0


def _list_from_api(
    address: str,
    *,
    app: str | None,
    run_id: str | None,
    outcome: pb.Outcome.ValueType | None,
    token: str | None,
    tls_ca: Path | None,
    tls: bool,
) -> list[pb.Result]:
    """Every matching result, page by page; exits 2 with the API's own words when it refuses."""
    import grpc

    from reag.v1 import api_pb2, api_pb2_grpc

    if tls_ca is not None or tls:
        roots = tls_ca.read_bytes() if tls_ca is not None else None
        channel = grpc.secure_channel(
            address, grpc.ssl_channel_credentials(root_certificates=roots)
        )
    else:
        channel = grpc.insecure_channel(address)
    # Plain metadata rather than call credentials: gRPC refuses those on a plaintext
    # channel, and a ledger inside a cluster may ask for a token without TLS.
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    found: list[pb.Result] = []
    request = api_pb2.ListResultsRequest(app=app or "", run_id=run_id or "")
    if outcome is not None:
        request.outcome = outcome
    try:
        with channel:
            stub = api_pb2_grpc.ResultsServiceStub(channel)
            while True:
                page = stub.ListResults(request, metadata=metadata, timeout=API_TIMEOUT_S)
                # PENDING is OUTCOME_UNSPECIFIED, which the API reads as "every outcome".
                found.extend(r for r in page.results if outcome is None or r.outcome == outcome)
                if not page.next_page_token:
                    return found
                request.page_token = page.next_page_token
    except grpc.RpcError as exc:
        code = exc.code() if isinstance(exc, grpc.Call) else None
        name = code.name if code is not None else "error"
        detail = exc.details() if isinstance(exc, grpc.Call) else str(exc)
        typer.echo(f"error: the results API at {address} answered {name}: {detail}", err=True)
        raise typer.Exit(2) from exc


def list_results(
    *,
    store_dsn: str | None,
    api: str | None,
    token: str | None,
    tls_ca: Path | None,
    tls: bool,
    app: str | None,
    run_id: str | None,
    outcome: pb.Outcome.ValueType | None = None,
) -> list[pb.Result]:
    if api:
        return _list_from_api(
            api, app=app, run_id=run_id, outcome=outcome, token=token, tls_ca=tls_ca, tls=tls
        )
    from sqlalchemy.exc import OperationalError

    from reag.settings import ReagSettings, shown_dsn

    dsn = store_dsn or ReagSettings().resolved_store_dsn()
    try:
        store = open_store(dsn)
        try:
            return store.list_results(app=app, run_id=run_id, outcome=outcome)
        finally:
            store.close()
    except OperationalError as exc:
        # The driver's message names host and port, never the password; the URL is masked.
        reason = str(exc.orig or exc).splitlines()[0]
        typer.echo(f"error: the store at {shown_dsn(dsn)} cannot be read: {reason}", err=True)
        raise typer.Exit(2) from exc


def open_store(dsn: str | None) -> LedgerStore:
    from reag.ledger.store import LedgerStore
    from reag.settings import ReagSettings

    return LedgerStore.open(dsn or ReagSettings().resolved_store_dsn())


def _print_stuck(
    store_dsn: str | None, app: str | None, window: float | None, *, as_json: bool
) -> None:
    from reag.ledger.stuck import StuckSettings

    after_s = window if window is not None else StuckSettings().ledger_stuck_after_s
    store = open_store(store_dsn)
    try:
        found = store.stuck_cases(after_s, app=app)
    finally:
        store.close()
    if as_json:
        rows = [
            {
                "case_id": c.case_id,
                "app": c.app,
                "run_id": c.run_id,
                "first_seen": c.first_seen.isoformat(),
                "n_criteria": c.n_criteria,
                "decided": c.decided,
            }
            for c in found
        ]
        typer.echo(json.dumps(rows, indent=2))
    elif not found:
        typer.echo(f"no stuck cases (none started more than {after_s:.0f}s ago is unfinished)")
    else:
        typer.echo(f"{'case':<40} {'app':<14} {'started (UTC)':<20} decided")
        for c in found:
            started = c.first_seen.strftime("%Y-%m-%d %H:%M:%S")
            typer.echo(f"{c.case_id:<40} {c.app:<14} {started:<20} {c.decided}/{c.n_criteria}")
        typer.echo(
            f"{len(found)} case(s) started more than {after_s:.0f}s ago and never finished: "
            "their events were lost in flight (an embedded broker restart keeps nothing); "
            "send their traffic again"
        )
    if found:
        raise typer.Exit(1)


def results(
    *,
    app_name: AppOption = None,
    run_id: RunOption = None,
    outcome: Annotated[
        str | None,
        typer.Option("--outcome", help="Only PASS, FAIL, ABSTAIN or PENDING cases."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print a JSON list of results (reag.v1.Result).")
    ] = False,
    detail: Annotated[
        bool, typer.Option("--detail", help="Show every criterion and each tier's attempt.")
    ] = False,
    markdown: Annotated[
        Path | None,
        typer.Option("--markdown", help="Also write a Markdown report (summary, tiers, cost)."),
    ] = None,
    store_dsn: StoreOption = None,
    api: ApiOption = None,
    token: TokenOption = None,
    tls_ca: TlsCaOption = None,
    tls: TlsOption = False,
    stuck: Annotated[
        bool,
        typer.Option(
            "--stuck",
            help="List cases that started (the ledger has their oracle) and never finished "
            "within --window; exits 1 if there are any.",
        ),
    ] = False,
    window: Annotated[
        float | None,
        typer.Option(
            "--window",
            min=0,
            help="Seconds a started case may take (default REAG_LEDGER_STUCK_AFTER_S).",
            show_default="3600",
        ),
    ] = None,
) -> None:
    """List test case results: outcome, criteria decided, open criteria, tiers, honest cost."""
    if stuck:
        _print_stuck(store_dsn, app_name, window, as_json=as_json)
        return
    from reag.ledger.formatting import (
        format_summary,
        format_table,
        markdown_report,
        result_to_dict,
    )
    from reag.ledger.summary import UnknownOutcomeError, parse_outcome, summarize

    try:
        wanted = parse_outcome(outcome) if outcome else None
    except UnknownOutcomeError as exc:
        raise typer.BadParameter(str(exc), param_hint="--outcome") from exc
    found = list_results(
        store_dsn=store_dsn,
        api=api,
        token=token,
        tls_ca=tls_ca,
        tls=tls,
        app=app_name,
        run_id=run_id,
        outcome=wanted,
    )
    if markdown is not None:
        scope = " ".join(f"{k} {v}" for k, v in (("app", app_name), ("run", run_id)) if v)
        title = f"reag results: {scope}" if scope else "reag results"
        markdown.parent.mkdir(parents=True, exist_ok=True)
        markdown.write_text(markdown_report(found, title=title), encoding="utf-8")
    if as_json:
        typer.echo(json.dumps([result_to_dict(r) for r in found], indent=2))
        return
    typer.echo(format_table(found, detail=detail))
    if found:
        typer.echo("")
        typer.echo(format_summary(summarize(found)))
    if markdown is not None:
        typer.echo(f"report written to {markdown}")


def gate(
    *,
    max_fail_rate: Annotated[
        float, typer.Option("--max-fail-rate", help="Largest acceptable share of FAIL cases.")
    ],
    max_abstain_rate: Annotated[
        float,
        typer.Option(
            "--max-abstain-rate",
            help="Largest acceptable share of ABSTAIN cases (pending cases count as abstained).",
        ),
    ],
    app_name: AppOption = None,
    run_id: RunOption = None,
    store_dsn: StoreOption = None,
    api: ApiOption = None,
    token: TokenOption = None,
    tls_ca: TlsCaOption = None,
    tls: TlsOption = False,
    count_provisional: Annotated[
        bool,
        typer.Option(
            "--count-provisional",
            help="Count provisional outcomes (verdicts under a threshold borrowed from other "
            "apps, not yet certified by this app's audits) as they are; by default they count "
            "as abstained.",
        ),
    ] = False,
) -> None:
    """Exit 1 when the run's fail or abstain rate exceeds its limit, 0 otherwise.

    2: no results, or the results API could not be read.
    """
    from reag.ledger.gate import InvalidRateError, NoResultsError, evaluate_gate

    found = list_results(
        store_dsn=store_dsn,
        api=api,
        token=token,
        tls_ca=tls_ca,
        tls=tls,
        app=app_name,
        run_id=run_id,
    )
    scope = ", ".join(f"{k} {v!r}" for k, v in (("app", app_name), ("run", run_id)) if v)
    try:
        report = evaluate_gate(
            found,
            max_fail_rate=max_fail_rate,
            max_abstain_rate=max_abstain_rate,
            scope=scope or "any app and run",
            count_provisional=count_provisional,
        )
    except InvalidRateError as exc:
        raise typer.BadParameter(str(exc)) from exc
    except NoResultsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    typer.echo(
        f"{report.cases} cases: fail rate {report.fail_rate:.3f} "
        f"(max {report.max_fail_rate:.3f}), abstain rate {report.abstain_rate:.3f} "
        f"(max {report.max_abstain_rate:.3f}; {report.pending} pending counted as abstained"
        + (
            f"; {report.provisional} provisional "
            + ("counted as they are" if count_provisional else "counted as abstained")
            if report.provisional
            else ""
        )
        + ")"
    )
    if not report.passed:
        for breach in report.breaches:
            typer.echo(f"GATE FAILED: {breach}")
        raise typer.Exit(1)
    typer.echo("GATE PASSED")


def register(app: typer.Typer) -> None:
    app.command("results")(results)
    app.command("gate")(gate)
