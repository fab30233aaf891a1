"""The one sampling key: the user, else the request id, else the case id; None with no id."""

from __future__ import annotations

from reag.traffic.policy import ShadowPolicy
from reag.traffic.sampling import kept, sample_key, sample_point
from reag.traffic.shadow import sampled_in
from reag.v1 import events_pb2 as pb


def test_the_key_falls_back_from_user_to_request_to_case() -> None:
    assert sample_key("a", "u1", "r1", "c1") == "a/user/u1"
    assert sample_key("a", "u1", "r1", "c1", by="request") == "a/request/r1"
    assert sample_key("a", "", "r1", "c1") == "a/request/r1"
    assert sample_key("a", "", "", "c1") == "a/request/c1"
    assert sample_key("a", "", "", "c1", by="request") == "a/request/c1"
    assert sample_key("a", "", "") is None


def test_kept_is_the_point_below_the_rate_and_everything_at_one() -> None:
    keys = [f"k{i}" for i in range(500)]
    assert [kept(k, 0.3) for k in keys] == [sample_point(k) < 0.3 for k in keys]
    assert all(kept(k, 1.0) for k in keys)
    assert not any(kept(k, 0.0) for k in keys)


def test_the_gate_samples_an_event_without_request_id_on_its_case_id() -> None:
    policy = ShadowPolicy(sample_rate=0.5, sample_by="request")
    decisions = []
    for i in range(200):
        event = pb.Traffic()
        event.meta.app, event.meta.case_id = "nutrition", f"nutrition-{i:016x}"
        decisions.append(sampled_in(policy, event))
        assert decisions[-1] == (sample_point(f"nutrition/request/nutrition-{i:016x}") < 0.5)
    assert 60 < sum(decisions) < 140
    assert not sampled_in(policy, pb.Traffic())  # no id at all: the codec refuses it first
