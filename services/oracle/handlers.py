"""The oracle's one handler: ``pb.Interpretation`` -> one ``pb.Oracle`` + N ``pb.JudgeRequest``.

An oracle that stays invalid after its retries raises ``OracleInvalidError``
(a ``StructuredOutputError``); ``consume`` dead-letters the interpretation as
``llm_output_invalid`` with the model's last output, and publishes nothing
else for that case.
"""

from __future__ import annotations

from faststream.kafka import KafkaRouter

from reag.oracle.writer import OracleWriter, judge_requests, oracle_event
from reag.v1 import events_pb2 as pb
from services.kit.delivery import Emit, consume
from services.kit.topology import INTERPRETATIONS, JUDGE_TIER, ORACLES, SERVICES, suffixed
from services.oracle.settings import OracleSettings


def build_router(settings: OracleSettings, writer: OracleWriter) -> KafkaRouter:
    suffix = settings.topic_suffix
    spec = suffixed(SERVICES["oracle"], suffix)
    router = KafkaRouter()
    limits = settings.prompt_limits()

    @consume(
        router,
        spec,
        INTERPRETATIONS + suffix,
        pb.Interpretation,
        max_event_bytes=settings.kafka.max_event_bytes,
        delivery=settings.delivery,
    )
    async def write_oracle(event: pb.Interpretation) -> list[Emit]:
        oracle = oracle_event(event, await writer.write(event))
        case_id = event.meta.case_id
        return [
            Emit(ORACLES + suffix, oracle, case_id),
            *(
                Emit(JUDGE_TIER[1] + suffix, request, case_id)
                for request in judge_requests(oracle, limits)
            ),
        ]

    return router
