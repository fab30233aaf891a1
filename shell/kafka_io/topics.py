"""Creates reag's topics on a broker the embedded stack has just started."""

from __future__ import annotations

import asyncio


def ensure_topics_at(bootstrap: str) -> int:
    """Blocking, with its own event loop: ``supervisor.up`` calls it between the broker and
    the services, so the services find every topic they subscribe to. Returns how many
    topics were created (0 when all existed)."""
    from services.kit.admin import ensure_topics
    from services.kit.settings import KafkaSettings

    created = asyncio.run(ensure_topics(KafkaSettings(bootstrap_servers=bootstrap)))
    return len(created)
