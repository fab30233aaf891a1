"""Wiring of the ledger: settings, the SQL store, the router, the gRPC APIs' lifecycle."""

from __future__ import annotations

import functools

import grpc
from faststream.asgi import AsgiFastStream
from faststream.kafka import KafkaBroker

from reag.corpus.store import CorpusStore
from reag.elicitation.directory import PersonaDirectory
from reag.ledger.api import ResultsServer, server_credentials
from reag.ledger.store import LedgerStore
from reag.traffic.ingress import SERVICE_NAME, max_receive_bytes
from reag.traffic.policy import PolicyDirectory, PolicyStore
from reag.traffic.redaction import Redactor, pseudonym_key
from reag.v1 import api_pb2_grpc
from services.kit.app import make_app
from services.ledger.handlers import build_router
from services.ledger.settings import LedgerSettings
from services.ledger.stuck import StuckWatch
from services.ledger.traffic_api import broker_producer, traffic_ingress


def create_app(
    settings: LedgerSettings | None = None, *, store: LedgerStore | None = None
) -> AsgiFastStream:
    """The gRPC APIs start before the broker and stop after it.

    A Submit that arrives before the broker is connected is UNAVAILABLE, and
    the client retries.
    """
    settings = settings or LedgerSettings()
    owned = store is None
    ledger = store or LedgerStore.open(settings.resolved_store_dsn())
    token = settings.ledger_grpc_token
    server = ResultsServer(
        ledger,
        host=settings.ledger_grpc_host,
        port=settings.ledger_grpc_port,
        grace_s=settings.ledger_grpc_grace_s,
        token=token.get_secret_value() if token is not None else None,
        credentials=_credentials(settings),
        allow_insecure=settings.ledger_grpc_allow_insecure,
        # Checked before a byte of an oversized Submit is read, let alone redacted.
        max_receive_bytes=max_receive_bytes(settings.kafka.max_event_bytes),
    )

    watch = StuckWatch(ledger, settings)

    async def stop() -> None:
        await watch.stop()
        await server.stop()
        if owned:
            ledger.close()

    app = make_app(
        "ledger",
        settings,
        [build_router(settings, ledger)],
        on_startup=[server.start],
        after_startup=[watch.start],
        on_shutdown=[stop],
    )
    if settings.ledger_traffic_api:
        _add_traffic_api(server, app, settings)
    return app


def _credentials(settings: LedgerSettings) -> grpc.ServerCredentials | None:
    cert, key = settings.ledger_grpc_tls_cert, settings.ledger_grpc_tls_key
    # LedgerSettings checked that both are set or neither.
    return server_credentials(cert, key) if cert is not None and key is not None else None


def _add_traffic_api(server: ResultsServer, app: AsgiFastStream, settings: LedgerSettings) -> None:
    """TrafficService on the results API's port, producing with the ledger's broker."""
    dsn = settings.resolved_store_dsn()
    key = pseudonym_key(settings)

    # Opened on the first Submit, not here: a ledger that never takes traffic
    # (and its tests) should not touch the corpus and policy tables.
    @functools.cache
    def policies() -> PolicyDirectory:
        return PolicyDirectory(PolicyStore.open(dsn), pseudonym_key=key)

    @functools.cache
    def apps() -> PersonaDirectory:
        return PersonaDirectory.from_store(CorpusStore.open(dsn))

    def redactor_for(name: str) -> Redactor:
        return policies().redactor(name)

    def app_known(name: str) -> bool:
        return apps().knows(name)

    broker = app.broker
    assert isinstance(broker, KafkaBroker)  # make_app builds a KafkaBroker
    servicer = traffic_ingress(
        produce=broker_producer(broker),
        redactor_for=redactor_for,
        app_known=app_known,
        topic_suffix=settings.topic_suffix,
        max_event_bytes=settings.kafka.max_event_bytes,
    )
    server.add_service(
        SERVICE_NAME,
        lambda grpc_server: api_pb2_grpc.add_TrafficServiceServicer_to_server(
            servicer, grpc_server
        ),
    )
