"""Benchmark: CPU seconds the redactor spends on 1 MiB of pathological text per pattern family.

Each payload is built to make its family's pattern work hardest: long runs
of the characters a pattern accepts that never complete a match (``"a" * n +
"@"`` took the old e-mail pattern half an hour at 1 MiB), separators that
make every position a start, characters that normalisation must map or strip.
Timed with ``time.process_time`` (CPU, not wall clock), one run each. The goal
(issue 23): under 1 s per family at every way in; ``tests/unit/traffic/
test_redaction_hostile.py`` asserts 10 s, far above the figure and far below
the old pattern's.

``python -m bench redaction [--bytes N]`` prints one line per family, with the
CPU seconds of each way in: the redactor alone (``text``), gRPC ``Submit``
(``TrafficIngress.prepare``: size check, meta, redaction), the traffic consumer
(parse the event's bytes, redact it as the elicitor does), OTLP (parse a span
request, convert, redact) and the recorder (``record`` and ``flush`` against a
producer that acknowledges at once: the app's thread and the recorder's).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from reag.traffic.redaction import Redactor
from reag.v1 import api_pb2
from reag.v1 import events_pb2 as pb

MIB = 1_048_576


def _fill(unit: str, size: int, tail: str = "") -> str:
    """``unit`` repeated to ``size`` bytes of UTF-8, then ``tail``."""
    per = len(unit.encode())
    return unit * max(1, (size - len(tail.encode())) // per) + tail


PATHOLOGICAL: dict[str, Callable[[int], str]] = {
    "email": lambda n: _fill("a", n, "@"),
    "email_labels": lambda n: _fill("a@" + "b" * 62 + ".", n),
    "email_dots": lambda n: _fill("a.", n, "@x"),
    "card": lambda n: _fill("1", n),
    "card_spaced": lambda n: _fill("1 ", n),
    "card_dotted": lambda n: _fill("1234.", n),
    "iban": lambda n: _fill("ab12 ", n),
    "nino": lambda n: _fill("ab 12 34 ", n),
    "dob": lambda n: _fill("born on 12/", n),
    "ip": lambda n: _fill("1.", n),
    "ipv6": lambda n: _fill("a:", n),
    "phone": lambda n: _fill("+1 (", n),
    "invisible": lambda n: _fill("4\u200b", n),
    "fullwidth": lambda n: _fill("\uff14", n),
}
"""Family -> a payload of about ``n`` bytes of UTF-8."""


def cpu_seconds(text: str, redactor: Redactor | None = None) -> float:
    """CPU seconds ``redactor.text(text)`` takes (the default policy when None)."""
    redactor = redactor or Redactor()
    start = time.process_time()
    redactor.text(text)
    return time.process_time() - start


def _timed(work: Callable[[], object]) -> float:
    start = time.process_time()
    work()
    return time.process_time() - start


def _submit(text: str, size: int) -> float:
    from reag.traffic.ingress import TrafficIngress

    async def acknowledged(_topic: str, _value: bytes, _key: bytes) -> None:
        return None

    ingress = TrafficIngress(
        produce=acknowledged,
        redactor_for=lambda _app: Redactor(),
        app_known=lambda _app: True,
        topic="reag.traffic.v1",
        max_event_bytes=2 * size + 4096,
    )
    request = api_pb2.SubmitRequest(
        app="bench", traffic=pb.Traffic(request_id="r", query=text, actual_response="a")
    )
    return _timed(lambda: ingress.prepare(request))


def _consumer(text: str) -> float:
    event = pb.Traffic(request_id="r", query=text, actual_response="a")
    event.meta.app = "bench"
    data = event.SerializeToString()
    redactor = Redactor()
    return _timed(lambda: redactor.traffic(pb.Traffic.FromString(data)))


def _otlp(text: str, size: int) -> float:
    import json

    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    from reag.traffic.otlp import convert

    def kv(key: str, value: str) -> KeyValue:
        return KeyValue(key=key, value=AnyValue(string_value=value))

    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.append(kv("service.name", "bench"))
    span = resource_spans.scope_spans.add().spans.add()
    span.trace_id, span.span_id = b"\x01" * 16, b"\x02" * 8
    messages = [{"role": "user", "parts": [{"type": "text", "content": text}]}]
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": "a"}]}]
    span.attributes.extend(
        [
            kv("gen_ai.operation.name", "chat"),
            kv("gen_ai.input.messages", json.dumps(messages, ensure_ascii=False)),
            kv("gen_ai.output.messages", json.dumps(answer)),
        ]
    )
    data = request.SerializeToString()
    redactor = Redactor()

    def work() -> None:
        for event in convert(data, max_bytes=2 * size + 4096).events:
            redactor.traffic(event)

    return _timed(work)


def _recorder(text: str, size: int) -> float:
    import asyncio

    from reag.client import Recorder

    class Acknowledging:
        async def start(self) -> None:
            return None

        async def stop(self) -> None:
            return None

        async def send(self, *_args: object, **_kwargs: object) -> asyncio.Future[None]:
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            done.set_result(None)
            return done

    with Recorder(
        app="bench",
        producer_factory=Acknowledging,
        max_event_bytes=2 * size + 4096,
        pseudonym_key=b"bench",
    ) as recorder:
        recorder.flush(5)  # started: its thread's start is not counted
        return _timed(
            lambda: (
                recorder.record(query=text, response="a", request_id="r"),
                recorder.flush(600),
            )
        )


WAYS = ("text", "submit", "consumer", "otlp", "recorder")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench redaction")
    parser.add_argument("--bytes", type=int, default=MIB, help="payload size (default 1 MiB)")
    args = parser.parse_args(argv)
    size = args.bytes
    redactor = Redactor()
    print(f"redaction: CPU seconds per {size}-byte pathological payload (goal < 1 s)")
    print(f"  {'family':<14}" + "".join(f"{way:>10}" for way in WAYS))
    worst = dict.fromkeys(WAYS, 0.0)
    for family, build in PATHOLOGICAL.items():
        text = build(size)
        row = {
            "text": cpu_seconds(text, redactor),
            "submit": _submit(text, size),
            "consumer": _consumer(text),
            "otlp": _otlp(text, size),
            "recorder": _recorder(text, size),
        }
        for way, seconds in row.items():
            worst[way] = max(worst[way], seconds)
        print(f"  {family:<14}" + "".join(f"{row[way]:10.3f}" for way in WAYS))
    print(f"  {'worst':<14}" + "".join(f"{worst[way]:10.3f}" for way in WAYS))
    return 0


def run() -> None:
    """``python -m bench redaction``: the 1 MiB figures."""
    main([])


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
