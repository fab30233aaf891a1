"""Wiring of the ledger: settings, the SQL store, the router, the gRPC API's lifecycle."""

from __future__ import annotations

from faststream.asgi import AsgiFastStream

from reag.ledger.api import ResultsServer
from reag.ledger.store import LedgerStore
from services.kit.app import make_app
from services.ledger.handlers import build_router
from services.ledger.settings import LedgerSettings


def create_app(
    settings: LedgerSettings | None = None, *, store: LedgerStore | None = None
) -> AsgiFastStream:
    """The gRPC results API starts before the broker and stops after it."""
    settings = settings or LedgerSettings()
    owned = store is None
    ledger = store or LedgerStore.open(settings.resolved_store_dsn())
    server = ResultsServer(
        ledger,
        host=settings.ledger_grpc_host,
        port=settings.ledger_grpc_port,
        grace_s=settings.ledger_grpc_grace_s,
    )

    async def stop() -> None:
        await server.stop()
        if owned:
            ledger.close()

    return make_app(
        "ledger",
        settings,
        [build_router(settings, ledger)],
        on_startup=[server.start],
        on_shutdown=[stop],
    )
