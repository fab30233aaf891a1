"""The ledger's gRPC API (``reag.v1.ResultsService``) and the standard health service.

The servicer reads the store in a worker thread, so a slow query never stalls
the event loop the ledger's Kafka consumers share with it. Page tokens are
opaque to clients; they hold the offset of the next page.
"""

from __future__ import annotations

import asyncio
import logging

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from reag.ledger.store import DEFAULT_PAGE, MAX_PAGE, LedgerStore
from reag.v1 import api_pb2, api_pb2_grpc
from reag.v1 import events_pb2 as pb

log = logging.getLogger("reag.ledger.api")

SERVICE_NAME = "reag.v1.ResultsService"


class ServerNotStartedError(RuntimeError):
    """The port was asked for before ``ResultsServer.start``."""


def _offset(token: str) -> int:
    if not token:
        return 0
    if not token.isdigit():
        raise ValueError(f"page_token {token!r} was not issued by this service")
    return int(token)


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
    """ResultsService + grpc.health.v1 on one port; started and stopped with the ledger app."""

    def __init__(
        self, store: LedgerStore, *, host: str = "127.0.0.1", port: int = 0, grace_s: float = 5.0
    ) -> None:
        self._store = store
        self._address = f"{host}:{port}"
        self._grace_s = grace_s
        self._server: grpc.aio.Server | None = None
        self._health: health.aio.HealthServicer | None = None
        self._port: int | None = None

    @property
    def port(self) -> int:
        if self._port is None:
            raise ServerNotStartedError("the results server has not been started")
        return self._port

    async def start(self) -> None:
        server = grpc.aio.server()
        api_pb2_grpc.add_ResultsServiceServicer_to_server(ResultsServicer(self._store), server)
        health_servicer = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
        port = server.add_insecure_port(self._address)
        if port == 0:
            raise OSError(f"cannot bind the results API to {self._address}; is the port taken?")
        await server.start()
        for name in ("", SERVICE_NAME):
            await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
        self._server, self._health, self._port = server, health_servicer, port
        log.info("results API listening on port %d", port)

    async def stop(self) -> None:
        if self._server is None:
            return
        if self._health is not None:
            await self._health.enter_graceful_shutdown()
        await self._server.stop(self._grace_s)
        self._server = self._health = None
        self._port = None
