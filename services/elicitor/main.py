"""Wiring of the elicitor: settings, the corpus store's persona categories, the router."""

from __future__ import annotations

from faststream.asgi import AsgiFastStream

from reag.corpus.store import CorpusStore
from reag.elicitation.directory import PersonaDirectory
from services.elicitor.handlers import build_router
from services.elicitor.settings import ElicitorSettings
from services.kit.app import make_app


def create_app(settings: ElicitorSettings | None = None) -> AsgiFastStream:
    settings = settings or ElicitorSettings()
    store = CorpusStore.open(settings.resolved_store_dsn())
    personas = PersonaDirectory.from_store(store, ttl_s=settings.persona_cache_s)
    return make_app("elicitor", settings, [build_router(settings, personas)])
