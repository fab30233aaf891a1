"""Assembles a service process: broker + routers + /metrics + /healthz, served by uvicorn."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import uvicorn
from faststream.asgi import AsgiFastStream, make_ping_asgi
from faststream.kafka import KafkaRouter
from prometheus_client import REGISTRY, make_asgi_app

from services.kit.broker import make_broker
from services.kit.epoch import BrokerEpochWatch
from services.kit.settings import ServiceSettings
from services.kit.spend import SpendFlusher
from services.kit.telemetry import configure_logging, configure_tracing


def make_app(
    service: str,
    settings: ServiceSettings,
    routers: Sequence[KafkaRouter],
    *,
    on_startup: Sequence[Callable[..., Any]] = (),
    after_startup: Sequence[Callable[..., Any]] = (),
    on_shutdown: Sequence[Callable[..., Any]] = (),
) -> AsgiFastStream:
    configure_logging(settings.log_level, service)
    tracer_provider = configure_tracing(service, settings.otlp_endpoint)
    broker = make_broker(settings.kafka, service, tracer_provider=tracer_provider)
    for router in routers:
        broker.include_router(router)
    # Per-app spend, for the shadow controls' budgets (reag.traffic.spend).
    flusher = SpendFlusher(service, settings.resolved_store_dsn())
    # An embedded broker that restarted remembers nothing: reread from the start.
    epoch = BrokerEpochWatch(broker, settings.kafka)
    return AsgiFastStream(
        broker,
        asgi_routes=[
            ("/metrics", make_asgi_app(REGISTRY)),
            ("/healthz", make_ping_asgi(broker, timeout=5.0)),
        ],
        on_startup=on_startup,
        after_startup=[*after_startup, flusher.start, epoch.start],
        on_shutdown=[epoch.stop, flusher.stop, *on_shutdown],
    )


def serve(app: AsgiFastStream, settings: ServiceSettings) -> None:
    uvicorn.run(app, host=settings.http_host, port=settings.http_port, log_level="warning")
