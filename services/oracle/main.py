"""Wiring of the oracle service: settings, the oracle writer's LLM client, the router."""

from __future__ import annotations

from faststream.asgi import AsgiFastStream

from reag.llm import Caller
from reag.oracle.writer import OracleWriter
from services.kit.app import make_app
from services.oracle.handlers import build_router
from services.oracle.settings import OracleSettings


def build_writer(settings: OracleSettings) -> OracleWriter:
    from reag.llm.registry import make_client

    return OracleWriter(
        make_client(settings.oracle_model, caller=Caller(service="oracle")),
        limits=settings.prompt_limits(),
        attempts=settings.oracle_attempts,
        temperature=settings.oracle_temperature,
        retry_temperature=settings.oracle_retry_temperature,
        max_tokens=settings.oracle_max_tokens,
        criteria=settings.oracle_criteria,
    )


def create_app(settings: OracleSettings | None = None) -> AsgiFastStream:
    settings = settings or OracleSettings()
    return make_app("oracle", settings, [build_router(settings, build_writer(settings))])
