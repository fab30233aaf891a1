"""The generated stubs match proto/, and every topic's payload type exists there."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from reag.v1 import events_pb2
from services.kit.codec import REQUIRED_FIELDS
from services.kit.topology import SERVICES, TOPICS

ROOT = Path(__file__).resolve().parents[2]


def test_generated_stubs_are_fresh(tmp_path: Path) -> None:
    bin_dir = Path(sys.executable).parent
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            "-I",
            "proto",
            f"--python_out={tmp_path}",
            f"--grpc_python_out={tmp_path}",
            f"--mypy_out={tmp_path}",
            f"--mypy_grpc_out={tmp_path}",
            *(str(p.relative_to(ROOT)) for p in sorted((ROOT / "proto/reag/v1").glob("*.proto"))),
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
    )
    generated = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*_pb2*"))
    assert generated, "protoc produced nothing"
    stale = [
        str(rel)
        for rel in generated
        if (tmp_path / rel).read_bytes() != (ROOT / "src" / rel).read_bytes()
    ]
    assert not stale, f"stale stubs, run scripts/gen-proto.sh: {stale}"


def test_every_topic_payload_is_a_message_with_ids() -> None:
    ours = [spec for spec in TOPICS if spec.reag_event]
    for spec in ours:
        message = getattr(events_pb2, spec.payload)
        fields = message.DESCRIPTOR.fields_by_name
        assert "meta" in fields or spec.payload in {"Threshold", "DeadLetter"}, spec
    assert set(REQUIRED_FIELDS) <= {getattr(events_pb2, s.payload) for s in ours}


def test_payloads_reag_does_not_own_are_named_by_their_full_protobuf_name() -> None:
    foreign = {spec.name: spec.payload for spec in TOPICS if not spec.reag_event}
    assert foreign == {"otlp_spans": ExportTraceServiceRequest.DESCRIPTOR.full_name}


def test_every_consumed_topic_has_a_producer_or_is_an_entry_point() -> None:
    produced = {t for s in SERVICES.values() for t in s.produces}
    consumed = {t for s in SERVICES.values() for t in s.consumes}
    # Written by apps, review tools and the OpenTelemetry Collector.
    entry_points = {"reag.traffic.v1", "reag.reviews.v1", "otlp_spans"}
    assert consumed - produced <= entry_points
