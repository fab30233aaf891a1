"""Wiring of the elicitor: settings, the store's persona categories and traffic policies,
the traffic router and, unless REAG_OTLP__ENABLED=false, the OTLP spans router."""

from __future__ import annotations

from faststream.asgi import AsgiFastStream

from reag.corpus.store import CorpusStore
from reag.elicitation.directory import PersonaDirectory
from reag.traffic.policy import PolicyDirectory, PolicyStore
from reag.traffic.redaction import pseudonym_key
from reag.traffic.shadow import ShadowGate
from reag.traffic.spend import SpendStore
from services.elicitor.handlers import build_router
from services.elicitor.otlp import build_otlp_router
from services.elicitor.settings import ElicitorSettings
from services.kit.app import make_app


def create_app(settings: ElicitorSettings | None = None) -> AsgiFastStream:
    settings = settings or ElicitorSettings()
    dsn = settings.resolved_store_dsn()
    store = CorpusStore.open(dsn)
    personas = PersonaDirectory.from_store(store, ttl_s=settings.persona_cache_s)
    policies = PolicyDirectory(
        PolicyStore.open(dsn), ttl_s=settings.policy_cache_s, pseudonym_key=pseudonym_key(settings)
    )
    spend = SpendStore.open(dsn)
    gate = ShadowGate(spend.window)
    routers = [build_router(settings, personas, policies, gate)]
    if settings.otlp.enabled:
        routers.append(build_otlp_router(settings, policies, personas.knows))
    return make_app("elicitor", settings, routers)
