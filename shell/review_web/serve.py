"""Run the web review: the pages under uvicorn, ingest and re-publish beside them.

Refuses to start on a non-loopback address without reviewer tokens before it
opens anything (``auth.check_bind``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from services.kit.settings import ServiceSettings
from shell.kafka_io.review import KafkaReviewIO
from shell.review_web.app import WebReview, build_app
from shell.review_web.auth import Auth, check_bind, load_tokens
from shell.review_web.io import ingest, open_queue, republish

DEFAULT_PORT = 8765
WEB_GROUP = "reag-review"  # the terminal's group: each record reaches the queue once


@dataclass(frozen=True, slots=True)
class WebOptions:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    tokens_file: Path | None = None
    reviewer: str = "local"
    per_item: int = 1
    lease_s: float = 900.0
    tls_certfile: str | None = None
    tls_keyfile: str | None = None
    group: str = WEB_GROUP


def make_auth(options: WebOptions) -> Auth:
    tokens = load_tokens(options.tokens_file) if options.tokens_file else {}
    check_bind(options.host, tokens)
    return Auth(tokens=tokens, local_reviewer=options.reviewer)


async def run_web(
    settings: ServiceSettings,
    options: WebOptions,
    *,
    started: asyncio.Event | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve until ``stop`` is set (or for ever); ``started`` is set once the port listens."""
    auth = make_auth(options)
    queue = open_queue(
        settings.resolved_store_dsn(), per_item=options.per_item, lease_s=options.lease_s
    )
    logging.getLogger("faststream").setLevel(logging.WARNING)
    async with KafkaReviewIO(settings, group=options.group) as kafka:
        web = WebReview(
            queue=queue,
            sink=kafka,
            auth=auth,
            secure_cookie=options.tls_certfile is not None,
        )
        config = uvicorn.Config(
            build_app(web),
            host=options.host,
            port=options.port,
            log_level="warning",
            ssl_certfile=options.tls_certfile,
            ssl_keyfile=options.tls_keyfile,
            lifespan="off",
        )
        server = uvicorn.Server(config)
        tasks = [
            asyncio.create_task(ingest(kafka, queue)),
            asyncio.create_task(republish(kafka, queue)),
            asyncio.create_task(server.serve()),
        ]

        async def stopper() -> None:
            if stop is not None:
                await stop.wait()
                server.should_exit = True

        watch = asyncio.create_task(stopper())
        try:
            while not server.started:
                if tasks[2].done():
                    await tasks[2]  # raises the bind error
                    return
                await asyncio.sleep(0.05)
            if started is not None:
                started.set()
            await tasks[2]
        finally:
            for task in (*tasks, watch):
                task.cancel()
            for task in (*tasks, watch):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
