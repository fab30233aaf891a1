"""The ledger's gRPC port behind a bearer token and TLS: both services, the CLI, the wiring."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import grpc
import pytest
from faststream import TestApp
from faststream.kafka import KafkaBroker, TestKafkaBroker
from grpc_health.v1 import health_pb2, health_pb2_grpc
from pydantic import SecretStr, ValidationError
from typer.testing import CliRunner

from reag.corpus.model import Document
from reag.corpus.store import CorpusStore
from reag.ledger.api import BearerTokenInterceptor, ResultsServer, server_credentials
from reag.ledger.store import LedgerStore
from reag.traffic.ingress import SERVICE_NAME
from reag.traffic.redaction import Redactor
from reag.v1 import api_pb2, api_pb2_grpc
from reag.v1 import events_pb2 as pb
from services.kit.topology import TRAFFIC
from services.ledger.main import create_app
from services.ledger.settings import LedgerSettings
from services.ledger.traffic_api import traffic_ingress
from shell.stack.ports import free_port
from tests.tls_certs import Tls, self_signed

from .conftest import YES, Events

TOKEN = "s3cret-token-for-tests"
Metadata = Sequence[tuple[str, str]]
GOOD: Metadata = (("authorization", f"Bearer {TOKEN}"),)
BAD_TOKENS: list[Metadata] = [
    (),
    (("authorization", "Bearer not-the-token"),),
    (("authorization", TOKEN),),  # no scheme
    (("authorization", f"Bearer {TOKEN}x"),),
]


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Tls:
    """A self-signed certificate for localhost and 127.0.0.1, made here (no key is committed)."""
    pytest.importorskip(
        "cryptography", reason="the cryptography package makes the test certificate"
    )
    return self_signed(tmp_path_factory.mktemp("tls"))


async def _accept(_topic: str, _value: bytes, _key: bytes) -> None:
    """A producer whose broker always acknowledges."""


def _server(
    store: LedgerStore, *, credentials: grpc.ServerCredentials | None = None
) -> ResultsServer:
    servicer = traffic_ingress(
        produce=_accept, redactor_for=lambda _app: Redactor(), app_known=lambda _app: True
    )
    server = ResultsServer(store, token=TOKEN, credentials=credentials)
    server.add_service(
        SERVICE_NAME, lambda s: api_pb2_grpc.add_TrafficServiceServicer_to_server(servicer, s)
    )
    return server


@pytest.fixture
def filled(sqlite_dsn: str) -> LedgerStore:
    store = LedgerStore.open(sqlite_dsn)
    ev = Events("nutrition-0", n=1)
    store.record_oracle(ev.oracle())
    store.record_verdict(ev.verdict(0, YES))
    return store


@pytest.fixture
async def guarded(filled: LedgerStore) -> AsyncIterator[ResultsServer]:
    server = _server(filled)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def _submit() -> api_pb2.SubmitRequest:
    return api_pb2.SubmitRequest(
        app="nutrition",
        traffic=pb.Traffic(request_id="r-1", query="Is it ok?", actual_response="Yes."),
    )


async def _call_each(channel: grpc.aio.Channel, metadata: Metadata) -> dict[str, grpc.StatusCode]:
    """The status of one call of each kind (unary and client-streaming, on both services)."""
    results = api_pb2_grpc.ResultsServiceStub(channel)
    traffic = api_pb2_grpc.TrafficServiceStub(channel)
    calls = {
        "GetSummary": results.GetSummary(api_pb2.GetSummaryRequest(), metadata=metadata),
        "ListResults": results.ListResults(api_pb2.ListResultsRequest(), metadata=metadata),
        "Submit": traffic.Submit(_submit(), metadata=metadata),
        "SubmitStream": traffic.SubmitStream(iter([_submit(), _submit()]), metadata=metadata),
    }
    codes: dict[str, grpc.StatusCode] = {}
    for name, call in calls.items():
        try:
            await call
            codes[name] = grpc.StatusCode.OK
        except grpc.aio.AioRpcError as exc:
            codes[name] = exc.code()
    return codes


@pytest.mark.parametrize("metadata", BAD_TOKENS, ids=["none", "wrong", "no-scheme", "longer"])
async def test_a_missing_or_wrong_token_is_unauthenticated_on_both_services(
    guarded: ResultsServer, metadata: Metadata
) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{guarded.port}") as channel:
        codes = await _call_each(channel, metadata)
    assert set(codes.values()) == {grpc.StatusCode.UNAUTHENTICATED}, codes


async def test_the_right_token_is_let_through_and_health_needs_none(guarded: ResultsServer) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{guarded.port}") as channel:
        codes = await _call_each(channel, GOOD)
        health = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=SERVICE_NAME)
        )
    assert set(codes.values()) == {grpc.StatusCode.OK}, codes
    assert health.status == health_pb2.HealthCheckResponse.SERVING


def test_an_empty_token_is_refused_rather_than_accepting_everyone() -> None:
    with pytest.raises(ValueError, match="must not be empty"):
        BearerTokenInterceptor("")
    interceptor = BearerTokenInterceptor(TOKEN)
    assert interceptor.authorized([("Authorization", f"Bearer {TOKEN}".encode())])
    assert not interceptor.authorized(None)


async def test_tls_with_the_token_serves_both_services_and_refuses_plaintext(
    filled: LedgerStore, tls: Tls
) -> None:
    server = _server(filled, credentials=server_credentials(tls.cert, tls.key))
    await server.start()
    try:
        credentials = grpc.ssl_channel_credentials(root_certificates=tls.cert.read_bytes())
        async with grpc.aio.secure_channel(f"localhost:{server.port}", credentials) as channel:
            assert set((await _call_each(channel, GOOD)).values()) == {grpc.StatusCode.OK}
            summary = await api_pb2_grpc.ResultsServiceStub(channel).GetSummary(
                api_pb2.GetSummaryRequest(), metadata=GOOD
            )
            assert summary.cases == 1
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as plain:
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await api_pb2_grpc.ResultsServiceStub(plain).GetSummary(
                    api_pb2.GetSummaryRequest(), metadata=GOOD, timeout=5
                )
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        await server.stop()


async def test_reag_results_reads_the_api_over_tls_with_the_token(
    filled: LedgerStore, tls: Tls, monkeypatch: pytest.MonkeyPatch
) -> None:
    import typer

    from shell.cli import results as results_cli

    cli = typer.Typer()
    results_cli.register(cli)
    monkeypatch.delenv("REAG_LEDGER_GRPC_TOKEN", raising=False)
    server = _server(filled, credentials=server_credentials(tls.cert, tls.key))
    await server.start()
    try:
        args = ["results", "--api", f"localhost:{server.port}", "--tls-ca", str(tls.cert), "--json"]
        runner = CliRunner()
        # The CLI's channel is blocking; the server needs this event loop, so the CLI runs aside.
        ok = await asyncio.to_thread(
            runner.invoke, cli, args, env={"REAG_LEDGER_GRPC_TOKEN": TOKEN}
        )
        refused = await asyncio.to_thread(runner.invoke, cli, args)
        gate = await asyncio.to_thread(
            runner.invoke,
            cli,
            ["gate", "--max-fail-rate", "0", "--max-abstain-rate", "0", *args[1:5]],
            env={"REAG_LEDGER_GRPC_TOKEN": TOKEN},
        )
    finally:
        await server.stop()
    assert ok.exit_code == 0, ok.output
    assert [r["meta"]["case_id"] for r in json.loads(ok.stdout)] == ["nutrition-0"]
    assert refused.exit_code == 2
    assert "UNAUTHENTICATED" in refused.stderr
    assert gate.exit_code == 0, gate.output
    assert "GATE PASSED" in gate.stdout


def test_tls_settings_come_in_pairs_and_an_empty_token_is_refused(tls: Tls) -> None:
    with pytest.raises(ValidationError, match="both REAG_LEDGER_GRPC_TLS_CERT"):
        LedgerSettings(ledger_grpc_tls_cert=tls.cert)
    with pytest.raises(ValidationError, match="does not exist"):
        LedgerSettings(ledger_grpc_tls_cert=tls.cert, ledger_grpc_tls_key=tls.cert.parent / "nope")
    with pytest.raises(ValidationError, match="set but empty"):
        LedgerSettings(ledger_grpc_token=SecretStr(""))
    assert TOKEN not in repr(LedgerSettings(ledger_grpc_token=SecretStr(TOKEN)))


async def test_the_ledger_app_serves_submit_over_tls_with_the_token_onto_the_topic(
    tmp_path: Path, tls: Tls
) -> None:
    """The wiring of services/ledger/main.py: settings to TLS, token, policy and corpus checks."""
    dsn = f"sqlite:///{tmp_path / 'reag.db'}"
    CorpusStore.open(dsn).add(
        "nutrition",
        [Document("nutrition", "persona", "P1", "Elderly", "Aged 78.", source="test")],
    )
    port = free_port()
    settings = LedgerSettings(
        store_dsn=dsn,
        topic_suffix="-wired",
        ledger_grpc_port=port,
        ledger_grpc_token=SecretStr(TOKEN),
        ledger_grpc_tls_cert=tls.cert,
        ledger_grpc_tls_key=tls.key,
    )
    app = create_app(settings)
    assert isinstance(app.broker, KafkaBroker)
    produced: list[pb.Traffic] = []

    @app.broker.subscriber(TRAFFIC + "-wired")
    async def collect(body: bytes) -> None:
        produced.append(pb.Traffic.FromString(body))

    credentials = grpc.ssl_channel_credentials(root_certificates=tls.cert.read_bytes())
    async with (
        TestKafkaBroker(app.broker),
        TestApp(app),
        grpc.aio.secure_channel(f"localhost:{port}", credentials) as channel,
    ):
        stub = api_pb2_grpc.TrafficServiceStub(channel)
        request = _submit()
        request.traffic.query = "I am ann@example.org, is it ok?"
        reply = await stub.Submit(request, metadata=GOOD)
        with pytest.raises(grpc.aio.AioRpcError) as unknown:
            await stub.Submit(
                api_pb2.SubmitRequest(app="other", traffic=request.traffic), metadata=GOOD
            )
        with pytest.raises(grpc.aio.AioRpcError) as anonymous:
            await stub.Submit(request)
    assert reply.accepted
    assert unknown.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert anonymous.value.code() == grpc.StatusCode.UNAUTHENTICATED
    [event] = produced
    assert event.meta.case_id == reply.case_id
    assert event.query == "I am [REDACTED:EMAIL], is it ok?"
