"""A small Chrome DevTools Protocol client: headless Chromium driven over one websocket.

Enough for the web review's browser test: navigate, press keys as a person
would (``Input.dispatchKeyEvent``), evaluate a line of script, take a
screenshot, and keep the body of every response the page fetched (the blind
rule is checked on all of them). Uses Debian's ``chromium`` and the
``websockets`` package already in the environment; nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect


@dataclass(slots=True)
class Fetched:
    url: str
    status: int
    mime: str
    body: str
    seen_after: frozenset[str]  # what the test had labelled when the response arrived


@dataclass(slots=True)
class Browser:
    proc: asyncio.subprocess.Process
    ws: ClientConnection
    profile: str
    fetched: list[Fetched] = field(default_factory=list)
    labelled: set[str] = field(default_factory=set)
    _next_id: int = 0
    _pending: dict[int, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    _waiters: list[tuple[str, asyncio.Future[dict[str, Any]]]] = field(default_factory=list)
    _meta: dict[str, tuple[str, int, str, frozenset[str]]] = field(default_factory=dict)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _reader: asyncio.Task[None] | None = None

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[self._next_id] = future
        await self.ws.send(json.dumps({"id": self._next_id, "method": method, "params": params}))
        return await asyncio.wait_for(future, 30)

    def expect(self, method: str) -> asyncio.Future[dict[str, Any]]:
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiters.append((method, future))
        return future

    async def _read(self) -> None:
        async for raw in self.ws:
            message = json.loads(raw)
            if "id" in message:
                future = self._pending.pop(message["id"], None)
                if future is not None and not future.done():
                    if "error" in message:
                        future.set_exception(RuntimeError(str(message["error"])))
                    else:
                        future.set_result(message.get("result", {}))
                continue
            method, params = message.get("method", ""), message.get("params", {})
            self._on_event(method, params)
            for waiter in [w for w in self._waiters if w[0] == method]:
                self._waiters.remove(waiter)
                if not waiter[1].done():
                    waiter[1].set_result(params)

    def _on_event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Network.responseReceived":
            response = params["response"]
            self._meta[params["requestId"]] = (
                response["url"],
                response["status"],
                response.get("mimeType", ""),
                frozenset(self.labelled),
            )
        elif method == "Network.loadingFinished" and params["requestId"] in self._meta:
            task = asyncio.create_task(self._keep_body(params["requestId"]))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _keep_body(self, request_id: str) -> None:
        url, status, mime, seen = self._meta.pop(request_id)
        try:
            result = await self.send("Network.getResponseBody", requestId=request_id)
        except RuntimeError:
            body = ""  # a redirect or an empty response has no body to keep
        else:
            body = result.get("body", "")
            if result.get("base64Encoded"):
                body = base64.b64decode(body).decode("utf-8", errors="replace")
        self.fetched.append(Fetched(url, status, mime, body, seen))

    async def settle(self) -> None:
        """Wait until every finished response's body has been kept."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks))

    async def goto(self, url: str) -> None:
        loaded = self.expect("Page.loadEventFired")
        await self.send("Page.navigate", url=url)
        await asyncio.wait_for(loaded, 30)
        await self.settle()

    async def press(self, key: str) -> None:
        """One key, as typed, then wait for the page it leads to."""
        loaded = self.expect("Page.loadEventFired")
        code = f"Key{key.upper()}" if key.isalpha() else key
        common = {"key": key, "code": code, "windowsVirtualKeyCode": ord(key.upper())}
        await self.send("Input.dispatchKeyEvent", type="keyDown", text=key, **common)
        await self.send("Input.dispatchKeyEvent", type="keyUp", **common)
        await asyncio.wait_for(loaded, 30)
        await self.settle()

    async def evaluate(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    async def screenshot(self, path: Path) -> None:
        shot = await self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        await asyncio.to_thread(path.write_bytes, base64.b64decode(shot["data"]))

    async def __aenter__(self) -> Browser:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with contextlib.suppress(Exception):
            await self.ws.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        self.proc.terminate()
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


async def launch(width: int = 1200, height: int = 900) -> Browser:
    """Headless Chromium on a fresh profile, attached to its one page."""
    binary = chromium_path()
    if binary is None:
        raise RuntimeError("no chromium on PATH")
    profile = tempfile.mkdtemp(prefix="reag-cdp-")
    proc = await asyncio.create_subprocess_exec(
        binary,
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-extensions",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--window-size={width},{height}",
        "--remote-debugging-port=0",
        f"--user-data-dir={profile}",
        "about:blank",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    active = Path(profile) / "DevToolsActivePort"
    for _ in range(300):
        if active.exists() and active.read_text().count("\n") >= 1:
            break
        await asyncio.sleep(0.1)
    else:
        proc.kill()
        await proc.wait()
        raise RuntimeError("chromium did not open its debugging port")
    port = int(active.read_text().splitlines()[0])
    async with httpx.AsyncClient() as client:
        targets = (await client.get(f"http://127.0.0.1:{port}/json/list")).json()
    page = next(t for t in targets if t.get("type") == "page")
    ws = await connect(page["webSocketDebuggerUrl"], max_size=None)
    browser = Browser(proc=proc, ws=ws, profile=profile)
    browser._reader = asyncio.create_task(browser._read())
    await browser.send("Network.enable", maxResourceBufferSize=50_000_000)
    await browser.send("Page.enable")
    await browser.send("Runtime.enable")
    return browser
