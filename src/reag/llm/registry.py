"""From a model string to a ready ``LLMClient``: the only place providers are chosen.

``openai:<model>``, ``gemini:<model>`` and ``local:<name>`` (the catalogue in
``reag.llm.local_models``). Each local model is loaded once per process and
shared by every client that names it (or reached through the model server
when ``REAG_LLM_LOCAL_URL`` is set); clients of one provider share its
concurrency limit; all clients share the process's ``CostLedger``. ``fake:``
models are not reachable from here: tests construct ``LLMClient(FakeProvider(...))`` themselves.
``scripted:<name>`` (``reag.llm.scripted``), the zero-latency model of load and chaos runs,
is refused unless ``REAG_LLM_ALLOW_SCRIPTED`` is set; with ``REAG_LLM_LOCAL_URL`` set it is
served by the model server like a local model, so a chaos run can kill that server too.
"""

from __future__ import annotations

import random
import threading
from pathlib import Path

from reag.llm.accounting import Caller, default_ledger
from reag.llm.base import ConfigurationError, Provider
from reag.llm.client import LLMClient, rate_limit_for
from reag.llm.llama_engine import LlamaEngine
from reag.llm.prices import PriceTable
from reag.llm.reliability import ConcurrencyLimiter, RateLimit
from reag.llm.scripted import SCRIPTED
from reag.llm.settings import LLMSettings

PROVIDERS = ("openai", "gemini", "local")

_lock = threading.Lock()
_engines: dict[tuple[str, Path, int, int, int | None, int], LlamaEngine] = {}
_limiters: dict[str, ConcurrencyLimiter] = {}
_rates: dict[str, RateLimit] = {}
_prices: dict[Path | None, PriceTable] = {}


def parse_model(model: str) -> tuple[str, str]:
    """``"openai:gpt-4.1-mini"`` → ``("openai", "gpt-4.1-mini")``."""
    provider, sep, name = model.partition(":")
    if not sep or not name:
        raise ConfigurationError(
            f"model {model!r} is not of the form '<provider>:<model>'; providers: "
            f"{', '.join(PROVIDERS)} (e.g. 'openai:gpt-4.1-mini', 'local:gemma-3-270m')"
        )
    if provider == "fake":
        raise ConfigurationError(
            "fake: models exist only in unit tests; construct LLMClient(FakeProvider(...))"
        )
    if provider not in (*PROVIDERS, SCRIPTED):
        raise ConfigurationError(
            f"unknown provider {provider!r} in {model!r}; known: {', '.join(PROVIDERS)}"
        )
    return provider, name


def local_engine(settings: LLMSettings, name: str = "gemma-3-270m") -> LlamaEngine:
    """The process's loaded ``local:<name>`` for these settings, loading it on first use."""
    from reag.llm.local import model_file
    from reag.llm.local_models import local_model

    spec = local_model(name)
    key = (
        name,
        settings.local_model_path if not spec.parts else settings.models_dir,
        settings.local_context,
        settings.local_slots,
        settings.local_threads,
        settings.local_block,
    )
    with _lock:
        engine = _engines.get(key)
        if engine is None:
            path = model_file(name, settings.local_model_path, settings.models_dir)
            engine = LlamaEngine(
                path,
                n_ctx=settings.local_context,
                slots=settings.local_slots,
                n_threads=settings.local_threads,
                block=settings.local_block,
                template=spec.template,
                default_system=spec.default_system,
            )
            _engines[key] = engine
        return engine


def make_provider(model: str, settings: LLMSettings, *, in_process: bool = False) -> Provider:
    """``in_process``: load a local model here even if ``local_url`` is set (the server does)."""
    provider, name = parse_model(model)
    if provider == SCRIPTED:
        return _scripted(model, settings, in_process=in_process)
    if provider == "openai":
        from reag.llm.openai_provider import OpenAIProvider

        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
        return OpenAIProvider(
            name, api_key=key, base_url=settings.openai_base_url, timeout_s=settings.timeout_s
        )
    if provider == "gemini":
        from reag.llm.gemini_provider import GeminiProvider

        key = settings.gemini_api_key.get_secret_value() if settings.gemini_api_key else None
        return GeminiProvider(name, api_key=key, timeout_s=settings.timeout_s)
    from reag.llm.local import LocalProvider
    from reag.llm.local_models import local_model

    local_model(name)  # an unknown name fails here, before any server is asked
    if settings.local_url and not in_process:
        from reag.llm.remote import ModelServerProvider

        return ModelServerProvider(settings.local_url, model, timeout_s=settings.local_timeout_s)
    return LocalProvider(local_engine(settings, name), model)


def _scripted(model: str, settings: LLMSettings, *, in_process: bool) -> Provider:
    if not settings.allow_scripted:
        raise ConfigurationError(
            f"{model!r} is the scripted model of load and chaos runs; it answers without "
            "judging anything. Set REAG_LLM_ALLOW_SCRIPTED=true only for such a run."
        )
    from reag.llm.scripted import LatentProvider, latency_draw, scripted_provider

    provider: Provider
    if settings.local_url and not in_process:
        from reag.llm.remote import ModelServerProvider

        provider = ModelServerProvider(settings.local_url, model, timeout_s=settings.timeout_s)
    else:
        provider = scripted_provider(model)
    if settings.scripted_latency_s <= 0 or in_process:
        return provider  # in_process: the model server answers; its clients wait the latency
    draw = latency_draw(
        settings.scripted_latency_s, settings.scripted_latency_dist, random.Random()
    )
    return LatentProvider(provider, draw)


def _shared_limiter(provider: Provider, settings: LLMSettings) -> ConcurrencyLimiter:
    base = getattr(provider, "base_url", None) or ""
    key = f"{provider.model}@{base}#{settings.concurrency}"
    with _lock:
        limiter = _limiters.get(key)
        if limiter is None:
            limiter = _limiters[key] = ConcurrencyLimiter(settings.concurrency)
        return limiter


def _shared_rate(provider: Provider, settings: LLMSettings) -> RateLimit:
    """One rate limit per model and endpoint in a process, shared by its clients."""
    base = getattr(provider, "base_url", None) or ""
    key = (
        f"{provider.model}@{base}#{settings.requests_per_minute}/{settings.tokens_per_minute}"
        f"/{settings.replicas}"
    )
    with _lock:
        rate = _rates.get(key)
        if rate is None:
            rate = _rates[key] = rate_limit_for(settings)
        return rate


def _price_table(settings: LLMSettings) -> PriceTable:
    with _lock:
        table = _prices.get(settings.prices_file)
        if table is None:
            table = _prices[settings.prices_file] = PriceTable.load(settings.prices_file)
        return table


def make_client(
    model: str | None = None,
    *,
    caller: Caller | None = None,
    settings: LLMSettings | None = None,
) -> LLMClient:
    """A client for ``model`` (default: settings' ``model``), charged to ``caller``.

    Fails fast with ``ConfigurationError`` for an unknown provider, a missing
    key, or a model the price table does not list.
    """
    settings = settings or LLMSettings()
    provider = make_provider(model or settings.model, settings)
    return LLMClient(
        provider,
        caller,
        settings=settings,
        prices=_price_table(settings),
        ledger=default_ledger(),
        limiter=_shared_limiter(provider, settings),
        rate=_shared_rate(provider, settings),
    )
