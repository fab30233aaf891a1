"""The demo's cost lines: every call counted, local seconds measured, hosted prices beside."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

from shell.demo import _spend_from, _spend_lines


def registry_with_calls() -> CollectorRegistry:
    """Metrics named and labelled as reag.metrics writes them, in a registry of their own."""
    registry = CollectorRegistry()
    labels = ["model", "service", "tier"]
    calls = Counter("reag_llm_calls", "", [*labels, "kind", "outcome"], registry=registry)
    tokens = Counter("reag_llm_tokens", "", [*labels, "type"], registry=registry)
    seconds = Histogram("reag_llm_call_seconds", "", [*labels, "kind"], registry=registry)
    model = "local:qwen2.5-coder-1.5b-instruct"
    for _ in range(3):
        calls.labels(model, "judge", "2", "label_probs", "ok").inc()
        seconds.labels(model, "judge", "2", "label_probs").observe(4.0)
    tokens.labels(model, "judge", "2", "prompt").inc(3_000)
    tokens.labels(model, "judge", "2", "cached").inc(1_000)
    tokens.labels(model, "judge", "2", "completion").inc(3)
    return registry


def test_local_calls_show_measured_seconds_and_the_paper_tiers_price() -> None:
    samples = (s for f in registry_with_calls().collect() for s in f.samples)
    spend = _spend_from(samples, "unused")
    row = spend[("judge", "2", "local:qwen2.5-coder-1.5b-instruct")]
    assert (row.calls, row.seconds, row.tokens) == (3, 12.0, 2_003)
    assert row.usd == 0.0  # local: never charged
    line = next(line for line in _spend_lines(spend) if line.strip().startswith("judge (2)"))
    # Gemini 2.5 Flash: 2,000 uncached at 0.30, 1,000 cached at 0.075, 3 output at 2.50 per M
    expected = (2_000 * 0.30 + 1_000 * 0.075 + 3 * 2.50) / 1e6
    assert line.split()[-1] == f"{expected:.6f}"
    assert line.split()[-4:-2] == ["2003", "12"]
