"""A TLS (and optionally SASL/PLAIN) terminating proxy in front of the embedded broker.

Tansu speaks neither TLS nor SASL, and a managed Kafka does both, so this proxy
stands where the managed broker's listener would: clients reach it with TLS,
and when ``users`` is given they must authenticate with SASL/PLAIN
(SaslHandshake + SaslAuthenticate, answered here) before any other request is
passed on. Tansu advertises the proxy's port, so every connection a client
makes, bootstrap or partition leader, goes through it. Test use only.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import struct
import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

from shell.stack.ports import free_port
from shell.stack.tansu import broker_command, wait_for_port
from tests.tls_certs import Tls

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
SASL_AUTHENTICATION_FAILED = 58
UNSUPPORTED_SASL_MECHANISM = 33


@contextlib.contextmanager
def tansu_behind(proxy_port: int) -> Iterator[int]:
    """A Tansu broker on a port of its own that advertises ``proxy_port`` to clients."""
    port = free_port()
    command = broker_command(port)
    command[command.index("--advertised-listener-url") + 1] = f"tcp://127.0.0.1:{proxy_port}"
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        wait_for_port("127.0.0.1", port)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()


def _string(data: bytes, at: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">h", data, at)
    at += 2
    return data[at : at + max(n, 0)].decode(), at + max(n, 0)


def _response(correlation_id: int, body: bytes) -> bytes:
    payload = struct.pack(">i", correlation_id) + body
    return struct.pack(">i", len(payload)) + payload


@dataclass
class KafkaTlsProxy:
    upstream_port: int
    tls: Tls
    users: dict[str, str] | None = None  # None: TLS only; else SASL/PLAIN user -> password
    port: int = field(default_factory=free_port)
    refused: int = 0  # connections refused for bad credentials or requests before auth
    authenticated: int = 0

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[KafkaTlsProxy]:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.tls.cert, self.tls.key)
        server = await asyncio.start_server(self._serve, "127.0.0.1", self.port, ssl=context)
        try:
            yield self
        finally:
            server.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(server.wait_closed(), 5)

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            up_r, up_w = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            client_w.close()
            return
        back = asyncio.create_task(self._pump(up_r, client_w))
        try:
            await self._requests(client_r, client_w, up_w)
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            back.cancel()
            for writer in (client_w, up_w):
                writer.close()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, ssl.SSLError, asyncio.CancelledError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()

    async def _requests(
        self,
        client_r: asyncio.StreamReader,
        client_w: asyncio.StreamWriter,
        up_w: asyncio.StreamWriter,
    ) -> None:
        authenticated = self.users is None
        while True:
            size = await client_r.readexactly(4)
            frame = await client_r.readexactly(struct.unpack(">i", size)[0])
            api_key, api_version, correlation_id = struct.unpack_from(">hhi", frame)
            if authenticated or api_key == API_VERSIONS:
                up_w.write(size + frame)
                await up_w.drain()
                continue
            _client_id, at = _string(frame, 8)
            if api_key == SASL_HANDSHAKE:
                mechanism, _ = _string(frame, at)
                error = 0 if mechanism == "PLAIN" else UNSUPPORTED_SASL_MECHANISM
                body = struct.pack(">hih", error, 1, 5) + b"PLAIN"
                client_w.write(_response(correlation_id, body))
                await client_w.drain()
                continue
            if api_key == SASL_AUTHENTICATE:
                (n,) = struct.unpack_from(">i", frame, at)
                token = frame[at + 4 : at + 4 + n]
                _authzid, user, password = token.split(b"\x00", 2)
                assert self.users is not None
                ok = self.users.get(user.decode()) == password.decode()
                message = b"" if ok else b"authentication failed"
                body = struct.pack(">h", 0 if ok else SASL_AUTHENTICATION_FAILED)
                body += struct.pack(">h", len(message)) + message if message else b"\xff\xff"
                body += struct.pack(">i", 0)  # no server token
                if api_version >= 1:
                    body += struct.pack(">q", 0)  # session lifetime: unlimited
                client_w.write(_response(correlation_id, body))
                await client_w.drain()
                if not ok:
                    self.refused += 1
                    return
                self.authenticated += 1
                authenticated = True
                continue
            self.refused += 1  # any other request before authenticating
            return
