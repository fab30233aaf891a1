"""Shadow controls: deterministic sampling at the configured rate, a one-minute rate
limit, per-app spend budgets from the store, and every shed case given a reason."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from reag.llm.accounting import AppSpend, Caller, CostLedger, charged_to
from reag.llm.base import Usage
from reag.traffic.policy import PolicyDirectory, PolicyStore, ShadowPolicy, TrafficPolicy
from reag.traffic.sampling import sample_point
from reag.traffic.shadow import ShadowGate, sampled_in
from reag.traffic.spend import SpendStore, WindowSpend
from reag.v1 import events_pb2 as pb


def _event(user: str, request: str = "", *, origin: int = pb.ORIGIN_LIVE) -> pb.Traffic:
    event = pb.Traffic(request_id=request or f"r-{user}")
    event.meta.app = "nutrition"
    event.meta.origin = origin  # type: ignore[assignment]
    event.profile.user_id = user
    return event


def _no_spend(_app: str) -> WindowSpend:
    return WindowSpend(0, 0.0, 0.0)


def test_sample_points_are_uniform() -> None:
    points = [sample_point(f"k{i}") for i in range(20_000)]
    for q in (0.1, 0.25, 0.5, 0.9):
        share = sum(p < q for p in points) / len(points)
        assert abs(share - q) < 0.015


def test_sampling_by_user_keeps_a_user_in_or_out_for_good() -> None:
    policy = ShadowPolicy(sample_rate=0.3)
    kept = [u for u in range(2_000) if sampled_in(policy, _event(f"u{u}"))]
    assert 0.26 < len(kept) / 2_000 < 0.34
    for u in range(200):
        first = sampled_in(policy, _event(f"u{u}", "a"))
        assert all(sampled_in(policy, _event(f"u{u}", f"req{i}")) == first for i in range(5))


def test_sampling_by_request_varies_within_a_user() -> None:
    policy = ShadowPolicy(sample_rate=0.5, sample_by="request")
    decisions = {sampled_in(policy, _event("u1", f"req{i}")) for i in range(50)}
    assert decisions == {True, False}


def test_rate_limit_sheds_beyond_the_window_and_recovers() -> None:
    now = [0.0]
    gate = ShadowGate(_no_spend, clock=lambda: now[0])
    policy = ShadowPolicy(max_cases_per_minute=3)
    reasons = [gate.admit(policy, _event(f"u{i}")) for i in range(5)]
    assert reasons == [None, None, None, "rate_limited", "rate_limited"]
    now[0] = 61.0
    assert gate.admit(policy, _event("u9")) is None


def test_synthetic_cases_are_not_sampled_or_rate_limited() -> None:
    gate = ShadowGate(_no_spend)
    policy = ShadowPolicy(sample_rate=0.0, max_cases_per_minute=1)
    synthetic = [_event(f"u{i}", origin=pb.ORIGIN_SYNTHETIC) for i in range(3)]
    assert [gate.admit(policy, e) for e in synthetic] == [None, None, None]
    assert gate.admit(policy, _event("live")) == "sampled_out"


@pytest.mark.parametrize(
    ("policy", "spent", "reason"),
    [
        (ShadowPolicy(max_usd_per_hour=1.0), WindowSpend(10, 1.0, 0.0), "budget_usd"),
        (ShadowPolicy(max_usd_per_hour=1.0), WindowSpend(10, 0.99, 1e6), None),
        (ShadowPolicy(max_compute_s_per_hour=60), WindowSpend(3, 0.0, 60.0), "budget_compute"),
        (ShadowPolicy(max_compute_s_per_hour=60), WindowSpend(3, 5.0, 59.0), None),
    ],
)
def test_budgets(policy: ShadowPolicy, spent: WindowSpend, reason: str | None) -> None:
    gate = ShadowGate(lambda _app: spent)
    assert gate.admit(policy, _event("u1")) == reason


def _store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.db'}"


def test_spend_window_sums_every_service_over_the_last_hour(tmp_path: Path) -> None:
    store = SpendStore.open(_store(tmp_path))
    now = datetime.now(UTC)
    store.add("retriever", {"a": AppSpend(2, 0.5, 10.0)}, at=now - timedelta(minutes=10))
    store.add("judge-tier1", {"a": AppSpend(1, 0.25, 3.0), "b": AppSpend(1, 9.0, 9.0)}, at=now)
    store.add("oracle", {"a": AppSpend(1, 7.0, 7.0)}, at=now - timedelta(hours=2))
    assert store.window("a", now=now) == WindowSpend(3, 0.75, 13.0)
    assert store.window("b", now=now).cost_usd == 9.0
    assert store.window("none", now=now) == WindowSpend(0, 0.0, 0.0)


def test_calls_are_charged_to_the_app_in_context() -> None:
    ledger = CostLedger()
    caller = Caller("judge", "1")
    with charged_to("nutrition"):
        ledger.record(caller, "m", "chat", usage=Usage(), cost_usd=0.1, latency_s=2.0)
    ledger.record(caller, "m", "chat", usage=Usage(), cost_usd=5.0, latency_s=9.0)
    drained = ledger.drain_by_app()
    assert drained == {"nutrition": AppSpend(1, 0.1, 2.0)}
    assert ledger.drain_by_app() == {}


def test_policy_store_round_trip_and_default(tmp_path: Path) -> None:
    store = PolicyStore.open(_store(tmp_path))
    assert store.get("nutrition") == TrafficPolicy()
    policy = TrafficPolicy(shadow=ShadowPolicy(sample_rate=0.2, max_usd_per_hour=3.0))
    store.put("nutrition", policy)
    store.put("nutrition", policy)
    assert store.get("nutrition") == policy
    directory = PolicyDirectory(store, ttl_s=0)
    event = _event("jane@example.com")
    assert directory.redact(event, where="test").profile.user_id.startswith("user-")
    assert directory.policy("nutrition").shadow.sample_rate == 0.2
