"""The ledger's gRPC API (``reag.v1.ResultsService``) and the standard health service.

The servicer reads the store in a worker thread, so a slow query never stalls
the event loop the ledger's Kafka consumers share with it. Page tokens are
opaque to clients; they hold the offset of the next page.

The server also carries the services the ledger process adds beside it (the
``TrafficService``, which produces to Kafka and so lives in ``services.ledger``),
on the same port, behind the same TLS and bearer token.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from reag.exposure import refuse_open_bind
from reag.ledger.store import DEFAULT_PAGE, MAX_PAGE, LedgerStore
from reag.v1 import api_pb2, api_pb2_grpc
from reag.v1 import events_pb2 as pb

log = logging.getLogger("reag.ledger.api")

SERVICE_NAME = "reag.v1.ResultsService"
HEALTH_METHODS = "/grpc.health.v1.Health/"

Registrar = Callable[[grpc.aio.Server], None]


class ServerNotStartedError(RuntimeError):
    """The port was asked for before ``ResultsServer.start``."""


def _offset(token: str) -> int:
    if not token:
        return 0
    if not token.isdigit():
        raise ValueError(f"page_token {token!r} was not issued by this service")
    return int(token)


class BearerTokenInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpc is untyped
    """Refuses, with UNAUTHENTICATED, every call without ``authorization: Bearer <token>``.

    The health service is exempt: kubelet's gRPC probes and grpc_health_probe
    send no metadata, and a health answer reveals nothing. The token is
    compared in constant time, so its prefix cannot be guessed by timing.
    """

    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("a bearer token must not be empty")
        self._expected = f"Bearer {token}".encode()

    def authorized(self, metadata: Sequence[tuple[str, str | bytes]] | None) -> bool:
        for key, value in metadata or ():
            if key.lower() == "authorization":
                given = value if isinstance(value, bytes) else value.encode()
                return hmac.compare_digest(given, self._expected)
        return False

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None or handler_call_details.method.startswith(HEALTH_METHODS):
            return handler
        if self.authorized(handler_call_details.invocation_metadata):
            return handler
        return _refusal(handler)


def _refusal(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    """A handler of the same shape as ``handler`` that only aborts with UNAUTHENTICATED.

    The shape must match, or the server would read a client stream as one
    message (or the reverse) before the refusal is sent.
    """

    async def refuse(_request: Any, context: grpc.aio.ServicerContext) -> None:
        await context.abort(
            grpc.StatusCode.UNAUTHENTICATED,
            "missing or wrong bearer token: send 'authorization: Bearer <token>' metadata",
        )

    serde = {
        "request_deserializer": handler.request_deserializer,
        "response_serializer": handler.response_serializer,
    }
    if handler.unary_unary:
        return grpc.unary_unary_rpc_method_handler(refuse, **serde)
    if handler.unary_stream:
        return grpc.unary_stream_rpc_method_handler(refuse, **serde)
    if handler.stream_unary:
        return grpc.stream_unary_rpc_method_handler(refuse, **serde)
    return grpc.stream_stream_rpc_method_handler(refuse, **serde)


def server_credentials(cert_file: Path, key_file: Path) -> grpc.ServerCredentials:
    """TLS credentials from a PEM certificate chain and its private key."""
    return grpc.ssl_server_credentials([(key_file.read_bytes(), cert_file.read_bytes())])


class ResultsServicer(api_pb2_grpc.ResultsServiceServicer):
    def __init__(self, store: LedgerStore) -> None:
        self._store = store

    async def GetResult(  # noqa: N802 - the gRPC method name
        self, request: api_pb2.GetResultRequest, context: grpc.aio.ServicerContext
    ) -> pb.Result:
        if not request.case_id:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "case_id is required")
        result = await asyncio.to_thread(self._store.get_result, request.case_id)
        if result is None:
            await context.abort(
                grpc.StatusCode.NOT_FOUND, f"no result for case {request.case_id!r}"
            )
        assert result is not None  # abort raises
        return result

    async def ListResults(  # noqa: N802
        self, request: api_pb2.ListResultsRequest, context: grpc.aio.ServicerContext
    ) -> api_pb2.ListResultsResponse:
        try:
            offset = _offset(request.page_token)
        except ValueError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
            raise  # unreachable: abort raises
        limit = min(request.limit or DEFAULT_PAGE, MAX_PAGE)
        outcome = request.outcome if request.outcome != pb.OUTCOME_UNSPECIFIED else None
        results = await asyncio.to_thread(
            self._store.list_results,
            app=request.app or None,
            run_id=request.run_id or None,
            outcome=outcome,
            limit=limit + 1,
            offset=offset,
        )
        response = api_pb2.ListResultsResponse()
        response.results.extend(results[:limit])
        if len(results) > limit:
            response.next_page_token = str(offset + limit)
        return response

    async def GetSummary(  # noqa: N802
        self, request: api_pb2.GetSummaryRequest, context: grpc.aio.ServicerContext
    ) -> api_pb2.Summary:
        return await asyncio.to_thread(
            self._store.summary, app=request.app or None, run_id=request.run_id or None
        )


class ResultsServer:
    """ResultsService + grpc.health.v1 on one port; started and stopped with the ledger app.

    ``token`` (when set) is required of every call but the health checks;
    ``credentials`` (when set) serve TLS instead of plaintext. Services added
    with ``add_service`` before ``start`` share both, and the health service
    reports them too. Without either, ``host`` must be loopback unless
    ``allow_insecure`` says otherwise (:func:`reag.exposure.refuse_open_bind`).
    reports them too. ``max_receive_bytes`` (when set) is gRPC's limit on a
    message it reads, in place of its 4 MiB default.
    """

    def __init__(
        self,
        store: LedgerStore,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        grace_s: float = 5.0,
        token: str | None = None,
        credentials: grpc.ServerCredentials | None = None,
        allow_insecure: bool = False,
        max_receive_bytes: int | None = None,
    ) -> None:
        refuse_open_bind(
            host,
            token=token,
            tls=credentials is not None,
            allow_insecure=allow_insecure,
            setting="REAG_LEDGER_GRPC_ALLOW_INSECURE",
        )
        self._store = store
        self._options = (
            []
            if max_receive_bytes is None
            else [("grpc.max_receive_message_length", max_receive_bytes)]
        )
        self._address = f"{host}:{port}"
        self._grace_s = grace_s
        self._interceptors = [BearerTokenInterceptor(token)] if token else []
        self._credentials = credentials
        self._extra: list[tuple[str, Registrar]] = []
        self._server: grpc.aio.Server | None = None
        self._health: health.aio.HealthServicer | None = None
        self._port: int | None = None

    @property
    def port(self) -> int:
        if self._port is None:
            raise ServerNotStartedError("the results server has not been started")
        return self._port

    def add_service(self, name: str, register: Registrar) -> None:
        """Serve another service on this port; ``register`` adds its servicer to the server.

        ``name`` is the full service name the health service reports
        (``reag.v1.TrafficService``).
        """
        if self._server is not None:
            raise RuntimeError("services must be added before the results server starts")
        self._extra.append((name, register))

    async def start(self) -> None:
        server = grpc.aio.server(interceptors=self._interceptors, options=self._options)
        api_pb2_grpc.add_ResultsServiceServicer_to_server(ResultsServicer(self._store), server)
        for _, register in self._extra:
            register(server)
        health_servicer = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
        if self._credentials is not None:
            port = server.add_secure_port(self._address, self._credentials)
        else:
            port = server.add_insecure_port(self._address)
        if port == 0:
            raise OSError(f"cannot bind the results API to {self._address}; is the port taken?")
        await server.start()
        for name in ("", SERVICE_NAME, *(name for name, _ in self._extra)):
            await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
        self._server, self._health, self._port = server, health_servicer, port
        log.info(
            "results API listening on port %d (%s%s)",
            port,
            "TLS" if self._credentials is not None else "plaintext",
            ", bearer token required" if self._interceptors else "",
        )

    async def stop(self) -> None:
        if self._server is None:
            return
        if self._health is not None:
            await self._health.enter_graceful_shutdown()
        await self._server.stop(self._grace_s)
        self._server = self._health = None
        self._port = None
