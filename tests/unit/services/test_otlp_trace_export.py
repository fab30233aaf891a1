"""With REAG_OTLP_ENDPOINT set, a service's spans, its LLM spans included, leave over OTLP/HTTP.

A service process is played by a subprocess (the global tracer provider can be
set once per process): it configures tracing as ``make_app`` does, makes one
LLM call inside a consume-like span and flushes. This test is the collector:
a local HTTP server that decodes what arrives at ``/v1/traces``.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import KeyValue

ROOT = Path(__file__).parents[3]
SECRET = "TRACE-EXPORT-QUERY-41d"
SERVICE = """
import asyncio, sys
from opentelemetry import trace
from reag.llm.accounting import Caller
from reag.llm.base import Message
from reag.llm.client import LLMClient
from reag.llm.scripted import FakeProvider
from services.kit.telemetry import configure_tracing

provider = configure_tracing("oracle", sys.argv[1])

async def main() -> None:
    client = LLMClient(FakeProvider(model="fake:oracle-model"), Caller("oracle"))
    with trace.get_tracer("test").start_as_current_span("reag.interpretations.v1 process"):
        await client.chat([Message("user", sys.argv[2])], max_tokens=32)

asyncio.run(main())
provider.shutdown()  # flushes the batch
"""


class _Collector(BaseHTTPRequestHandler):
    received: ClassVar[list[tuple[str, bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, body))
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *_args: object) -> None:
        return None


@pytest.fixture
def collector() -> Iterator[tuple[str, list[tuple[str, bytes]]]]:
    _Collector.received = []
    server = HTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", _Collector.received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _attributes(values: list[KeyValue]) -> dict[str, object]:
    out: dict[str, object] = {}
    for kv in values:
        kind = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, kind) if kind else None
    return out


def test_a_service_exports_its_spans_and_its_llm_spans_over_otlp(
    collector: tuple[str, list[tuple[str, bytes]]],
) -> None:
    endpoint, received = collector
    subprocess.run(
        [sys.executable, "-c", SERVICE, endpoint, f"What about {SECRET}?"],
        check=True,
        cwd=ROOT,
        timeout=180,
        capture_output=True,
    )
    assert received, "nothing reached the collector"
    assert {path for path, _ in received} == {"/v1/traces"}
    spans = {}
    for _, body in received:
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            resource = _attributes(list(resource_spans.resource.attributes))
            assert resource["service.name"] == "reag-oracle"
            for scope in resource_spans.scope_spans:
                spans.update({span.name: span for span in scope.spans})
    consume, llm = spans["reag.interpretations.v1 process"], spans["chat oracle-model"]
    assert llm.trace_id == consume.trace_id
    assert llm.parent_span_id == consume.span_id
    attributes = _attributes(list(llm.attributes))
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.request.model"] == "oracle-model"
    assert attributes["gen_ai.request.max_tokens"] == 32
    assert int(str(attributes["gen_ai.usage.input_tokens"])) > 0
    assert int(str(attributes["gen_ai.usage.output_tokens"])) > 0
    assert all(SECRET.encode() not in body for _, body in received)
