"""The recorder's mechanics on a fake producer: what reaches it, what is counted, and that
nothing the recorder does ever raises into the app."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from prometheus_client import REGISTRY

from bench.redaction import MIB, PATHOLOGICAL
from reag.client import Recorder
from reag.ids import case_id_for
from reag.traffic import shadow
from reag.traffic.live import LiveExchange
from reag.traffic.policy import ShadowPolicy
from reag.traffic.redaction import RedactionPolicy, Redactor
from reag.v1 import events_pb2 as pb
from tests.cpu_bound import within_cpu

EMAIL = "jane.doe@example.com"
PHONE = "+44 20 7946 0958"
CARD = "4111 1111 1111 1111"


class FakeProducer:
    """Acknowledges every send at once, unless told to fail or to hold its start."""

    def __init__(
        self,
        *,
        fail_send: bool = False,
        refuse: bool = False,
        start_gate: threading.Event | None = None,
    ) -> None:
        self.sent: list[tuple[str, bytes, bytes | None, list[tuple[str, bytes]]]] = []
        self.fail_send = fail_send
        self.refuse = refuse
        self.start_gate = start_gate
        self.stopped = False

    async def start(self) -> None:
        if self.start_gate is not None:  # a threading.Event: set from the test's thread
            await asyncio.to_thread(self.start_gate.wait)

    async def stop(self) -> None:
        self.stopped = True

    async def send(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        *,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> asyncio.Future[None]:
        if self.fail_send:
            raise RuntimeError("the fake refuses to send")
        assert value is not None
        self.sent.append((topic, value, key, list(headers or [])))
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self.refuse:
            future.set_exception(RuntimeError("not enough replicas"))
        else:
            future.set_result(None)
        return future

    def events(self) -> list[pb.Traffic]:
        return [pb.Traffic.FromString(value) for _topic, value, _key, _headers in self.sent]


@pytest.fixture
def fake() -> FakeProducer:
    return FakeProducer()


@pytest.fixture
def recorder(fake: FakeProducer) -> Iterator[Recorder]:
    with Recorder(app="nutrition", producer_factory=lambda: fake, topic="t") as rec:
        yield rec


def metric(app: str, outcome: str) -> float:
    value = REGISTRY.get_sample_value(
        "reag_recorder_events_total", {"app": app, "outcome": outcome}
    )
    return value or 0.0


def test_an_event_is_built_keyed_and_labelled_as_the_services_expect(
    recorder: Recorder, fake: FakeProducer
) -> None:
    assert recorder.record(
        query="Is this cereal OK for me?",
        response="It has 12 g of sugar per 100 g.",
        profile={"diet": "diabetic", "age": 61, "allergies": ["nuts"]},
        user_id="u-17",
        request_id="req-1",
        latency_s=0.42,
    )
    assert recorder.flush(5)
    [(topic, _value, key, headers)] = fake.sent
    [event] = fake.events()
    assert topic == "t"
    assert event.meta.case_id == case_id_for("nutrition", "req-1")
    assert key == event.meta.case_id.encode()
    assert ("content-type", b"application/x-protobuf") in headers
    assert ("x-reag-type", b"Traffic") in headers
    assert event.meta.origin == pb.ORIGIN_LIVE
    assert event.meta.schema_version == pb.SCHEMA_VERSION_1
    assert event.meta.app == "nutrition"
    assert event.meta.created_at.seconds > 0
    assert event.request_id == "req-1"
    assert event.query == "Is this cereal OK for me?"
    assert event.actual_response == "It has 12 g of sugar per 100 g."
    assert event.response_latency_s == pytest.approx(0.42)
    assert event.profile.user_id == "u-17"
    assert dict(event.profile.attributes) == {
        "diet": "diabetic",
        "age": "61",
        "allergies": '["nuts"]',
    }
    assert recorder.stats().recorded == 1


def test_pii_is_redacted_before_the_producer_sees_it(
    recorder: Recorder, fake: FakeProducer
) -> None:
    recorder.record(
        query=f"I am {EMAIL}, call {PHONE}",
        response=f"Charged card {CARD}.",
        profile={"contact": EMAIL},
        user_id=EMAIL,
    )
    assert recorder.flush(5)
    [(_topic, value, key, _headers)] = fake.sent
    for canary in (EMAIL, PHONE, CARD, "jane.doe", "7946"):
        assert canary.encode() not in value
        assert canary.encode() not in (key or b"")
    [event] = fake.events()
    assert "[REDACTED:EMAIL]" in event.query
    assert "[REDACTED:PHONE]" in event.query
    assert "[REDACTED:CARD]" in event.actual_response
    assert event.profile.user_id.startswith("user-")  # a stable pseudonym
    assert REGISTRY.get_sample_value(
        "reag_redactions_total", {"app": "nutrition", "kind": "EMAIL", "where": "recorder"}
    )


def test_the_app_redaction_policy_is_the_one_applied(fake: FakeProducer) -> None:
    policy = RedactionPolicy(recognisers=["email"], allow_attributes=["diet"])
    with Recorder(app="a", producer_factory=lambda: fake, redaction=policy) as rec:
        rec.record(query=f"{EMAIL} {PHONE}", response="r", profile={"diet": "x", "name": "Jane"})
        assert rec.flush(5)
    [event] = fake.events()
    assert EMAIL not in event.query
    assert PHONE in event.query  # phones are not in this app's policy
    assert dict(event.profile.attributes) == {"diet": "x"}


@pytest.mark.parametrize("by", ["user", "request"])
def test_the_recorder_and_the_shadow_gate_keep_the_same_cases(
    by: Literal["user", "request"],
) -> None:
    """The two sampling paths agree: the recorder decides before the event exists, the
    elicitor's gate on the redacted event it sent, and for every case, at every rate,
    both keep it or both drop it (users with PII in their id are pseudonymised first)."""
    users = [f"u{i % 30}" for i in range(90)] + [""] * 30 + [f"p{i}@example.com" for i in range(30)]
    cases = [(user, f"r-{i}") for i, user in enumerate(users)]
    everything = FakeProducer()
    with Recorder(app="nutrition", producer_factory=lambda: everything, sample_by=by) as rec:
        assert all(rec.record(query="q", response="r", user_id=u, request_id=r) for u, r in cases)
        assert rec.flush(5)
    events = everything.events()
    assert len(events) == len(cases)
    for rate in (0.2, 0.5, 0.8):
        with Recorder(
            app="nutrition", producer_factory=FakeProducer, sample_rate=rate, sample_by=by
        ) as rec:
            by_recorder = [
                rec.record(query="q", response="r", user_id=u, request_id=r) for u, r in cases
            ]
            assert rec.flush(5)
        policy = ShadowPolicy(sample_rate=rate, sample_by=by)
        by_gate = [shadow.sampled_in(policy, event) for event in events]
        assert by_recorder == by_gate
        assert 0 < sum(by_gate) < len(cases)


def test_a_user_is_in_or_out_for_good(fake: FakeProducer) -> None:
    with Recorder(app="s", producer_factory=lambda: fake, sample_rate=0.3) as rec:
        first = [rec.record(query="q", response="r", user_id=f"u{i}") for i in range(400)]
        again = [rec.record(query="q2", response="r2", user_id=f"u{i}") for i in range(400)]
        assert rec.flush(5)
        stats = rec.stats()
    assert first == again
    kept = sum(first)
    assert 80 < kept < 160  # 30% of 400, loosely
    assert stats.sampled_out == 2 * (400 - kept)
    assert stats.recorded == 2 * kept
    # Without a user the request id decides.
    with Recorder(app="s", producer_factory=FakeProducer, sample_rate=0.5) as rec:
        by_request = [rec.record(query="q", response="r", request_id=f"r{i}") for i in range(50)]
        assert by_request == [
            rec.record(query="q", response="r", request_id=f"r{i}") for i in range(50)
        ]


def test_a_full_queue_drops_counts_and_logs_once(caplog: pytest.LogCaptureFixture) -> None:
    gate = threading.Event()
    fake = FakeProducer(start_gate=gate)
    before = metric("q", "dropped_queue_full")
    with caplog.at_level(logging.WARNING, logger="reag.client"):
        rec = Recorder(app="q", producer_factory=lambda: fake, queue_size=3)
        outcomes = [rec.record(query="q", response="r") for _ in range(10)]
        assert outcomes == [True] * 3 + [False] * 7
        assert rec.stats().dropped_queue_full == 7
        assert metric("q", "dropped_queue_full") - before == 7
        assert REGISTRY.get_sample_value("reag_recorder_queue_depth", {"app": "q"}) == 3
        gate.set()
        assert rec.flush(5)
        rec.close()
    assert rec.stats().recorded == 3
    full = [r for r in caplog.records if "queue full" in r.getMessage()]
    assert len(full) == 1  # rate-limited


def test_nothing_raises_into_the_app() -> None:
    class Exploding:
        async def start(self) -> None:
            return None

        async def stop(self) -> None:
            return None

        async def send(self, *_args: Any, **_kwargs: Any) -> Any:
            raise RuntimeError("boom")

    with Recorder(app="n", producer_factory=Exploding) as rec:
        assert rec.record(query="q", response="r") is True  # queued; the send fails later
        assert rec.record(query=None, response="r") is True  # type: ignore[arg-type]
        assert rec.record(query="q", response="r", profile=42) is False  # type: ignore[arg-type]
        assert rec.flush(5)
        stats = rec.stats()
    assert stats.failed == 3
    assert stats.recorded == 0


def test_invalid_events_and_refused_deliveries_count_as_failed() -> None:
    fake = FakeProducer(refuse=True)
    with Recorder(app="f", producer_factory=lambda: fake) as rec:
        rec.record(query="q", response="r")
        rec.record(query="  ", response="r")  # the services would dead-letter it
        assert rec.flush(5)
        assert rec.stats().failed == 2
    assert len(fake.sent) == 1


def test_records_from_threads_without_a_loop_and_from_async_code(
    recorder: Recorder, fake: FakeProducer
) -> None:
    def worker(n: int) -> None:
        for i in range(50):
            recorder.record(query=f"q{n}-{i}", response="r")

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    async def app() -> bool:
        return await recorder.arecord(query="from async", response="r")

    assert asyncio.run(app())
    assert recorder.flush(5)
    assert len(fake.sent) == 201


def test_close_sends_what_is_queued_and_later_records_fail_quietly() -> None:
    gate = threading.Event()
    fake = FakeProducer(start_gate=gate)
    rec = Recorder(app="c", producer_factory=lambda: fake)
    for _ in range(5):
        rec.record(query="q", response="r")
    threading.Timer(0.2, gate.set).start()
    rec.close(timeout=5)
    assert len(fake.sent) == 5
    assert fake.stopped
    assert rec.record(query="late", response="r") is False
    assert rec.stats().failed == 1
    rec.close()  # idempotent


def test_close_with_kafka_unreachable_gives_up_at_the_deadline() -> None:
    class Unreachable(FakeProducer):
        async def start(self) -> None:
            raise ConnectionError("no broker")

    rec = Recorder(app="u", producer_factory=Unreachable)
    rec.record(query="q", response="r")
    assert rec.flush(0.2) is False
    rec.close(timeout=0.3)
    stats = rec.stats()
    assert stats.failed == 1
    assert stats.pending == 0


def test_the_callers_trace_context_travels_in_headers(
    recorder: Recorder, fake: FakeProducer
) -> None:
    sdk = pytest.importorskip("opentelemetry.sdk.trace")
    tracer = sdk.TracerProvider().get_tracer("app")
    with tracer.start_as_current_span("GET /advice") as span:
        recorder.record(query="q", response="r")
        trace_id = format(span.get_span_context().trace_id, "032x")
    recorder.record(query="untraced", response="r")
    assert recorder.flush(5)
    traced, untraced = (dict(headers) for _t, _v, _k, headers in fake.sent)
    assert trace_id in traced["traceparent"].decode()
    assert "traceparent" not in untraced


def test_record_exchange_takes_a_prepared_exchange(recorder: Recorder, fake: FakeProducer) -> None:
    recorder.record_exchange(LiveExchange(query="q", response="r", request_id="x"), app="other")
    assert recorder.flush(5)
    [event] = fake.events()
    assert event.meta.app == "other"
    assert event.meta.case_id == case_id_for("other", "x")


def test_bad_settings_are_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="sample_rate"):
        Recorder(app="a", sample_rate=1.5, producer_factory=FakeProducer)
    with pytest.raises(ValueError, match="app"):
        Recorder(app="", producer_factory=FakeProducer)


# --- hostile input (issue 23) ---------------------------------------------------------------


def test_an_event_over_the_limit_is_refused_before_any_pattern_runs(fake: FakeProducer) -> None:
    with (
        within_cpu("refusing 2 MiB"),
        Recorder(app="big", producer_factory=lambda: fake, max_event_bytes=4096) as rec,
    ):
        assert not rec.record(query="a" * (2 * MIB) + "@", response="r")  # on the app's thread
        assert rec.record(query="q", response="r", profile={"note": "a" * 5000})
        assert rec.flush(5)
        stats = rec.stats()
    assert fake.sent == []
    assert stats.failed == 2
    assert stats.recorded == 0


@pytest.mark.parametrize("family", ["email", "card_spaced", "invisible"])
def test_a_mib_of_pathological_text_is_recorded_in_bounded_cpu(
    fake: FakeProducer, family: str
) -> None:
    text = PATHOLOGICAL[family](MIB)
    with Recorder(app="hostile", producer_factory=lambda: fake, max_event_bytes=2 * MIB) as rec:
        with within_cpu(f"recording 1 MiB of {family}"):
            assert rec.record(query=text, response="r", request_id="r-1")
            assert rec.flush(60)
        assert rec.stats().recorded == 1


def _exchange(created_at: float, user_id: str = "u-1") -> LiveExchange:
    return LiveExchange(query="q", response="r", user_id=user_id, created_at=created_at)


def test_a_missing_request_id_is_derived_so_a_resend_keeps_its_case(
    recorder: Recorder, fake: FakeProducer
) -> None:
    recorder.record_exchange(_exchange(1_700_000_000.0))
    recorder.record_exchange(_exchange(1_700_000_000.0))  # the same exchange, sent again
    recorder.record_exchange(_exchange(1_700_000_060.0))  # asked again a minute later
    recorder.record_exchange(_exchange(1_700_000_000.0, user_id="u-2"))
    assert recorder.flush(5)
    cases = [event.meta.case_id for event in fake.events()]
    assert cases[0] == cases[1]
    assert len(set(cases)) == 3


def test_sampling_by_request_without_an_id_is_not_a_coin_toss(fake: FakeProducer) -> None:
    with Recorder(
        app="sampled", producer_factory=lambda: fake, sample_rate=0.5, sample_by="request"
    ) as rec:
        outcomes = {rec.record_exchange(_exchange(1_700_000_000.0)) for _ in range(40)}
    assert len(outcomes) == 1


def test_user_pseudonyms_use_the_given_key(fake: FakeProducer) -> None:
    with Recorder(app="keyed", producer_factory=lambda: fake, pseudonym_key="k-1") as rec:
        rec.record(query="q", response="r", user_id=EMAIL, request_id="r-1")
        assert rec.flush(5)
    [event] = fake.events()
    assert event.profile.user_id == Redactor(pseudonym_key=b"k-1").user_id(EMAIL)
    assert event.profile.user_id != Redactor(pseudonym_key=b"k-2").user_id(EMAIL)
