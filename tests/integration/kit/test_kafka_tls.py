"""The services' Kafka security settings against a TLS endpoint, with and without SASL.

Tansu has neither TLS nor SASL, so a proxy in front of it (tests/kafka_tls_proxy.py)
terminates TLS with a certificate made here and, for SASL_SSL, answers the SASL/PLAIN
handshake itself. A service built by ``make_broker`` from ``KafkaSettings`` (what
``REAG_KAFKA__*`` set) consumes, dead-letters and publishes through it; a wrong
password, a client without the CA, and a plaintext client are refused.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaConnectionError, KafkaError
from faststream.kafka import KafkaRouter

from reag.v1 import events_pb2 as pb
from services.kit.broker import make_broker
from services.kit.delivery import Emit, consume
from services.kit.settings import KafkaSettings
from services.kit.topology import DLQ, ServiceSpec
from tests.kafka_tls_proxy import KafkaTlsProxy, tansu_behind
from tests.tls_certs import Tls, self_signed

pytestmark = [pytest.mark.kafka]

USER, PASSWORD = "reag-service", "kafka-sasl-password"


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Tls:
    pytest.importorskip("cryptography", reason="the cryptography package makes the certificate")
    return self_signed(tmp_path_factory.mktemp("kafka-tls"))


def settings_for(protocol: str, proxy: KafkaTlsProxy, tls: Tls, **extra: str) -> KafkaSettings:
    values: dict[str, object] = {
        "bootstrap_servers": f"127.0.0.1:{proxy.port}",
        "security_protocol": protocol,
        "ssl_cafile": str(tls.cert),
    }
    if protocol.startswith("SASL"):
        values |= {"sasl_mechanism": "PLAIN", "sasl_username": USER, "sasl_password": PASSWORD}
    values |= extra
    return KafkaSettings.model_validate(values)


async def eventually(
    check: Callable[[], bool], arrived: asyncio.Event, timeout_s: float = 90.0
) -> None:
    """Until ``check()``; the subscribers set ``arrived`` on each message."""
    async with asyncio.timeout(timeout_s):
        while True:
            arrived.clear()
            if check():
                return
            await arrived.wait()


def traffic(case: str, version: int = 1) -> bytes:
    event = pb.Traffic(query="q", actual_response="r")
    event.meta.case_id, event.meta.app, event.meta.schema_version = case, "demo", version
    return event.SerializeToString()


@pytest.mark.parametrize("protocol", ["SSL", "SASL_SSL"])
async def test_a_service_consumes_and_publishes_through_tls(
    protocol: str, tls: Tls, topic_suffix: str
) -> None:
    users = {USER: PASSWORD} if protocol == "SASL_SSL" else None
    proxy = KafkaTlsProxy(0, tls, users)
    inp, out, service = f"in-{topic_suffix}", f"out-{topic_suffix}", f"tls-{topic_suffix}"
    spec = ServiceSpec(service, consumes=(inp,), produces=(out,))
    router = KafkaRouter()

    @consume(router, spec, inp, pb.Traffic, max_event_bytes=4096)
    async def to_intention(event: pb.Traffic) -> Emit:
        intention = pb.Intention(query=event.query)
        intention.meta.CopyFrom(event.meta)
        return Emit(out, intention, event.meta.case_id)

    with tansu_behind(proxy.port) as upstream:
        proxy.upstream_port = upstream
        async with proxy.running():
            broker = make_broker(settings_for(protocol, proxy, tls), service)
            broker.include_router(router)
            outputs: list[pb.Intention] = []
            letters: list[pb.DeadLetter] = []
            arrived = asyncio.Event()

            @broker.subscriber(out, group_id=f"sink-{topic_suffix}", auto_offset_reset="earliest")
            async def keep(body: bytes) -> None:
                outputs.append(pb.Intention.FromString(body))
                arrived.set()

            @broker.subscriber(DLQ, group_id=f"dlq-{topic_suffix}", auto_offset_reset="earliest")
            async def keep_letter(body: bytes) -> None:
                letter = pb.DeadLetter.FromString(body)
                if letter.service == service:
                    letters.append(letter)
                arrived.set()

            async with broker:
                await broker.start()
                for value in (traffic("c1"), traffic("c2", version=9), traffic("c3")):
                    await broker.publish(value, inp, key=b"k")
                await eventually(lambda: len(outputs) >= 2 and len(letters) >= 1, arrived)
    assert [o.meta.case_id for o in outputs] == ["c1", "c3"]
    assert [letter.error_type for letter in letters] == ["unknown_schema_version"]
    if users is not None:
        assert proxy.authenticated > 0
        assert proxy.refused == 0


async def test_wrong_password_missing_ca_and_plaintext_are_refused(
    tls: Tls, tmp_path: Path
) -> None:
    proxy = KafkaTlsProxy(0, tls, {USER: PASSWORD})
    with tansu_behind(proxy.port) as upstream:
        proxy.upstream_port = upstream
        async with proxy.running():
            bootstrap = f"127.0.0.1:{proxy.port}"
            wrong = settings_for("SASL_SSL", proxy, tls, sasl_password="not-the-password")
            broker = make_broker(wrong, "tls-wrong")
            with pytest.raises((KafkaError, OSError)):
                async with asyncio.timeout(60):
                    await broker.connect()
            await broker.stop()
            assert proxy.refused >= 1

            other_ca = self_signed(tmp_path)  # a CA that did not sign the proxy's certificate
            unverified = settings_for("SASL_SSL", proxy, tls, ssl_cafile=str(other_ca.cert))
            producer = AIOKafkaProducer(
                bootstrap_servers=bootstrap,
                security_protocol="SASL_SSL",
                sasl_mechanism="PLAIN",
                sasl_plain_username=USER,
                sasl_plain_password=PASSWORD,
                ssl_context=unverified.ssl_context(),
                request_timeout_ms=5000,
            )
            with pytest.raises(KafkaConnectionError):
                await producer.start()
            await producer.stop()

            plaintext = AIOKafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=5000)
            with pytest.raises(KafkaConnectionError):
                await plaintext.start()
            await plaintext.stop()
