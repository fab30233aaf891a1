"""The tier judges that score calibration items, built exactly as the live judges are.

A threshold holds only for the prompts and models it was fit on, so the
judges here use the app's pinned annotator sets and the tier's configured
model, the same ``TierJudge`` code path as ``services/judge``.
"""

from __future__ import annotations

from collections.abc import Sequence

from reag.calibration.store import CalibrationStore
from reag.judging.judge import TierJudge
from reag.judging.pinning import pinned_annotator_sets
from reag.judging.settings import CascadeSettings
from reag.llm.client import Caller, LLMClient


def build_judges(
    store: CalibrationStore, app: str, clients: Sequence[LLMClient], settings: CascadeSettings
) -> list[TierJudge]:
    """The cascade's judges for ``app``, each on the pinned example sets of its own N."""
    return [
        TierJudge(
            client,
            settings.judge_config(t),
            pinned_annotator_sets(
                store, app, settings.annotators_for(t), settings.examples, settings.seed
            ),
        )
        for t, client in enumerate(clients, start=1)
    ]


def make_tier_clients(settings: CascadeSettings, service: str) -> list[LLMClient]:
    """One client per tier of the cascade, charged to (service, tier), from REAG_TIER_MODELS."""
    # Deferred: the registry loads the provider and engine modules, which only a real run needs.
    from reag.llm.registry import make_client

    return [
        make_client(settings.model_for(t), caller=Caller(service=service, tier=str(t)))
        for t in range(1, settings.n_tiers + 1)
    ]
