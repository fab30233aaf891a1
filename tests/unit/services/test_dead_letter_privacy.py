"""What a dead letter's headers and the logs keep of a failed case: no profile, a short
excerpt of model output (services/kit/faults.py, LLM_OUTPUT_EXCERPT_CHARS)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest
from faststream.kafka import KafkaBroker, KafkaMessage, TestKafkaBroker

from reag.llm.base import Message
from reag.llm.client import LLMClient
from reag.llm.scripted import FakeProvider
from reag.oracle.writer import OracleWriter
from reag.v1 import events_pb2 as pb
from services.kit.faults import LLM_OUTPUT_EXCERPT_CHARS
from services.kit.topology import DLQ, INTERPRETATIONS
from services.oracle.handlers import build_router
from services.oracle.settings import OracleSettings
from tests.fuzz_consumers import good_event

PROFILE = "PROFILE-CANARY lives with chronic kidney disease"
SUFFIX = "-privacy"


async def test_an_invalid_oracle_dead_letters_a_short_excerpt_and_no_profile(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The model echoes the profile deep in a long, invalid output, as a confused one does;
    # only the excerpt's first characters may reach the header.
    output = "{" + "x" * 300 + f" {PROFILE} " + "y" * 5000

    def script(_messages: Sequence[Message], _options: dict[str, Any]) -> str:
        return output

    writer = OracleWriter(LLMClient(FakeProvider(chat_script=script)))
    router = build_router(OracleSettings(topic_suffix=SUFFIX), writer)
    broker = KafkaBroker()
    broker.include_router(router)
    letters: list[tuple[pb.DeadLetter, dict[str, Any]]] = []

    @broker.subscriber(DLQ, group_id="privacy-dlq")
    async def keep(body: bytes, message: KafkaMessage) -> None:
        letters.append((pb.DeadLetter.FromString(body), dict(message.headers)))

    event = good_event("Interpretation", "privacy-1")
    assert isinstance(event, pb.Interpretation)
    event.intention.persona.description = PROFILE
    with caplog.at_level(logging.DEBUG):
        async with TestKafkaBroker(broker) as test_broker:
            await test_broker.publish(event.SerializeToString(), INTERPRETATIONS + SUFFIX)
    ((letter, headers),) = letters
    assert letter.error_type == "llm_output_invalid"
    excerpt = headers["x-reag-llm-output"]
    assert excerpt == output[:LLM_OUTPUT_EXCERPT_CHARS]
    assert LLM_OUTPUT_EXCERPT_CHARS <= 200
    assert "PROFILE-CANARY" not in excerpt
    assert not any("PROFILE-CANARY" in str(v) for v in headers.values())
    assert not any("PROFILE-CANARY" in v for v in letter.headers.values())
    assert "PROFILE-CANARY" not in letter.reason
    assert "PROFILE-CANARY" not in caplog.text
    assert "y" * 300 not in caplog.text  # no long stretch of model output in the logs
