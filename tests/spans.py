"""One in-memory span exporter on the process's global tracer provider, for tracing tests.

The LLM layer traces through the global OpenTelemetry API (the core has no
provider of its own), and a process may set the global provider only once,
so every test that reads spans shares this exporter and clears it first.
"""

from __future__ import annotations

from functools import cache

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@cache
def global_spans() -> tuple[TracerProvider, InMemorySpanExporter]:
    """The global SDK provider (installed here if none is) and an exporter on it."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
        provider = trace.get_tracer_provider()
        assert isinstance(provider, TracerProvider), "another provider was set concurrently"
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter
