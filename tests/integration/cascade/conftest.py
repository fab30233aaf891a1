"""The judge cascade in-process over a real broker, with scripted label probabilities.

The judges' provider is a ``FakeProvider`` whose P(YES) is read from a marker
in the case's response (the fenced response after the case heading): these tests
exercise routing, thresholds and the review loop, not judging quality.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest
from google.protobuf.message import Message

from reag.calibration.store import CalibrationStore
from reag.judging.decision import threshold_key
from reag.judging.identity import JudgeIdentity
from reag.judging.prompt import RESPONSE_TAG
from reag.judging.tier import JudgeTier
from reag.llm.base import Message as LLMMessage
from reag.llm.client import LLMClient
from reag.llm.scripted import FakeProvider
from reag.v1 import events_pb2 as pb
from services.judge.handlers import build_router
from services.judge.main import build_tier, load_thresholds
from services.judge.settings import JudgeSettings
from services.kit.admin import ensure_topics
from services.kit.broker import make_broker
from services.kit.settings import KafkaSettings
from services.kit.testing import produce_events as produce
from services.kit.topology import THRESHOLDS

M = TypeVar("M", bound=Message)
APP = "nutrition"
_FENCED_RESPONSE = re.compile(rf"<{RESPONSE_TAG}>\n(.*?)\n</{RESPONSE_TAG}>", re.DOTALL)
# P(YES) each annotator gives when the case's response carries the marker.
MARKERS = {"SURE-YES": 0.99, "SURE-NO": 0.01, "FAIRLY-SURE": 0.8, "UNSURE": 0.6}


def scripted_p_yes(prompt: str | Sequence[LLMMessage], labels: Sequence[str]) -> dict[str, float]:
    # The case is the last user turn of a chat prompt (the examples come before it).
    text = (
        prompt if isinstance(prompt, str) else [m for m in prompt if m.role == "user"][-1].content
    )
    match = _FENCED_RESPONSE.search(text.partition("## Case under test")[2] or text)
    assert match, "judge prompt without a fenced response"
    p = next((v for k, v in MARKERS.items() if k in match.group(1)), 0.5)
    return {"YES": p, "NO": 1.0 - p}


def tier_provider(tier: int) -> FakeProvider:
    return FakeProvider(model=f"fake:tier{tier}", label_script=scripted_p_yes)


def judge_request(case: str, marker: str, *, criterion: str = "Flags sugar.") -> pb.JudgeRequest:
    request = pb.JudgeRequest(
        criterion=pb.Criterion(criterion_id=f"{case}/c0", index=0, text=criterion),
        oracle_id=f"{case}/oracle",
        n_criteria=1,
        query="Is this cereal fine for me?",
        actual_response=f"The cereal has 30 g sugar per 100 g. {marker}.",
        persona=pb.Persona(category_id="t2d", category_name="Type 2 diabetes"),
        evidence=[pb.Evidence(doc_id="requirement/R-1", sentence="Flag high sugar.")],
        test_objective="Sugar advice for a diabetic user.",
    )
    request.meta.case_id, request.meta.app = case, APP
    request.meta.schema_version = pb.SCHEMA_VERSION_1
    return request


def threshold(tier: int, value: float | None, *, seconds: int = 1_000) -> pb.Threshold:
    t = pb.Threshold(
        app=APP,
        tier=tier,
        model=f"fake:tier{tier}",
        has_threshold=value is not None,
        alpha=0.1,
        delta=0.1,
        mode="cascade",
    )
    if value is not None:
        t.threshold = value
    else:
        t.reason = "test: no threshold"
    t.computed_at.seconds = seconds
    return t


def threshold_topic_key(event: Message) -> str:
    assert isinstance(event, pb.Threshold)
    return threshold_key(event.app, event.tier)


async def until(condition: Callable[[], bool], timeout_s: float = 30.0) -> bool:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.1)
    return True


@dataclass
class Cascade:
    """Three running judge tiers on this test's topics."""

    kafka: KafkaSettings
    suffix: str
    deps: dict[int, JudgeTier]
    providers: dict[int, FakeProvider]
    store: CalibrationStore

    async def stamped(self, threshold: pb.Threshold) -> pb.Threshold:
        """``threshold`` as the calibrator publishes it: fitted on the tier's running judge."""
        judge = await self.deps[threshold.tier].judge_for(threshold.app)
        JudgeIdentity.of_judge(judge).stamp(threshold)
        return threshold

    @property
    def bootstrap(self) -> str:
        return self.kafka.bootstrap_servers


@pytest.fixture
def kafka(kafka_bootstrap: str) -> KafkaSettings:
    return KafkaSettings(bootstrap_servers=kafka_bootstrap)


@pytest.fixture
def calibration_store(tmp_path: Path) -> CalibrationStore:
    return CalibrationStore.open(f"sqlite:///{tmp_path / 'calibration.db'}")


StartCascade = Callable[[Sequence[pb.Threshold]], Awaitable[Cascade]]


@pytest.fixture
async def cascade_factory(
    kafka: KafkaSettings, topic_suffix: str, calibration_store: CalibrationStore
) -> AsyncIterator[StartCascade]:
    """Publishes the given thresholds, then starts judge-tier1..3 in-process."""
    await ensure_topics(kafka, topic_suffix)
    brokers = []

    async def start(thresholds: Sequence[pb.Threshold]) -> Cascade:
        deps: dict[int, JudgeTier] = {}
        providers: dict[int, FakeProvider] = {}
        every = {}
        for tier in (1, 2, 3):
            every[tier] = JudgeSettings(tier=tier, kafka=kafka, topic_suffix=topic_suffix)
            providers[tier] = tier_provider(tier)
            deps[tier] = build_tier(every[tier], LLMClient(providers[tier]), calibration_store)
        # Thresholds as the calibrator would publish them: fitted on these very judges.
        for t in thresholds:
            if not t.prompt_version:
                judge = await deps[t.tier].judge_for(t.app)
                JudgeIdentity.of_judge(judge).stamp(t)
        if thresholds:
            await produce(
                kafka.bootstrap_servers,
                THRESHOLDS + topic_suffix,
                thresholds,
                threshold_topic_key,
            )
        broker = make_broker(kafka, f"judges{topic_suffix}")
        for tier in (1, 2, 3):
            settings = every[tier]
            await load_thresholds(settings, deps[tier])
            broker.include_router(build_router(settings, deps[tier]))
        await broker.start()
        brokers.append(broker)
        return Cascade(kafka, topic_suffix, deps, providers, calibration_store)

    yield start
    for broker in brokers:
        await broker.stop()
