"""A TCP proxy that can be cut: a dependency's outage without touching the dependency.

The machine's PostgreSQL is shared and must never be stopped, so an outage is
made in front of it: ``cut()`` closes the listening socket (new connections
are refused) and aborts every open connection (the client sees a reset, as
when a server dies); ``restore()`` listens on the same port again. The proxy
runs its own event loop in a thread, so it keeps forwarding while the code
under test blocks its own loop or threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from types import TracebackType
from typing import Any, TypeVar

from shell.stack.ports import free_port

T = TypeVar("T")
_CHUNK = 65536


class CuttableProxy:
    """``127.0.0.1:port`` forwards to ``target_host:target_port`` until ``cut()``."""

    def __init__(self, target_host: str, target_port: int, port: int = 0) -> None:
        self.target = (target_host, target_port)
        self.port = port or free_port()
        self.connections = 0  # accepted while up, over the proxy's life
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    def _run(self, coroutine: Coroutine[Any, Any, T], timeout_s: float = 10.0) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout_s)

    # --- lifecycle, from any thread ---------------------------------------------------
    def start(self) -> CuttableProxy:
        self._thread.start()
        self.restore()
        return self

    def cut(self) -> None:
        """Refuse new connections and reset the open ones."""
        self._run(self._cut())

    def restore(self) -> None:
        self._run(self._listen())

    @property
    def up(self) -> bool:
        return self._server is not None

    def stop(self) -> None:
        if self._thread.is_alive():
            self._run(self._cut())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> CuttableProxy:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- on the proxy's loop ----------------------------------------------------------
    async def _listen(self) -> None:
        if self._server is None:
            self._server = await asyncio.start_server(
                self._accept, "127.0.0.1", self.port, reuse_address=True
            )

    async def _cut(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._server is None:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self.connections += 1
        self._writers |= {writer, up_writer}
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            for w in (writer, up_writer):
                self._writers.discard(w)
                w.transport.abort()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()
    with contextlib.suppress(ConnectionError, OSError, RuntimeError):
        writer.close()
