"""A gRPC server with neither a token nor TLS listens on loopback only, unless told otherwise."""

from __future__ import annotations

import grpc
import pytest

from reag.exposure import InsecureBindError, is_loopback, refuse_open_bind
from reag.ledger.api import ResultsServer
from reag.ledger.store import LedgerStore
from services.ledger.main import create_app
from services.ledger.settings import LedgerSettings


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("[::]", False),
        ("10.0.0.5", False),
        ("ledger.example.com", False),
        ("", False),
    ],
)
def test_only_loopback_counts_as_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_an_open_bind_needs_a_token_tls_or_an_explicit_choice() -> None:
    open_bind = {"host": "0.0.0.0", "setting": "REAG_X"}
    with pytest.raises(InsecureBindError, match="REAG_X=true"):
        refuse_open_bind(**open_bind, token=None, tls=False, allow_insecure=False)
    refuse_open_bind(**open_bind, token="t", tls=False, allow_insecure=False)
    refuse_open_bind(**open_bind, token=None, tls=True, allow_insecure=False)
    refuse_open_bind(**open_bind, token=None, tls=False, allow_insecure=True)
    refuse_open_bind(
        host="127.0.0.1", setting="REAG_X", token=None, tls=False, allow_insecure=False
    )


def test_the_results_server_refuses_all_interfaces_without_a_token(sqlite_dsn: str) -> None:
    store = LedgerStore.open(sqlite_dsn)
    try:
        with pytest.raises(InsecureBindError, match="REAG_LEDGER_GRPC_ALLOW_INSECURE"):
            ResultsServer(store, host="0.0.0.0")
        ResultsServer(store, host="0.0.0.0", token="t0ken")
        ResultsServer(store, host="0.0.0.0", credentials=grpc.local_server_credentials())
        ResultsServer(store, host="0.0.0.0", allow_insecure=True)
        ResultsServer(store)  # loopback, the default
    finally:
        store.close()


def test_the_ledger_service_will_not_start_open_unless_allowed(
    sqlite_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REAG_STORE_DSN", sqlite_dsn)
    monkeypatch.setenv("REAG_LEDGER_GRPC_HOST", "0.0.0.0")
    with pytest.raises(InsecureBindError):
        create_app(LedgerSettings())
    monkeypatch.setenv("REAG_LEDGER_GRPC_ALLOW_INSECURE", "true")
    assert LedgerSettings().ledger_grpc_allow_insecure
    create_app(LedgerSettings())
