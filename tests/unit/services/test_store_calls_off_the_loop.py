"""No store read or write runs on a service's event loop.

Each store, cache and directory here fails when called from a thread that runs an
event loop; the handlers must reach them through ``asyncio.to_thread`` (a cache
miss reads the SQL store, which may wait seconds on a busy database, and the
event loop also serves the consumers' heartbeats and the ledger's gRPC API).
A call made on the loop becomes a ``processing_error`` dead letter, so the tests
check that good events flow and that every dead letter has its expected reason.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from faststream.kafka import KafkaBroker, KafkaRouter, TestKafkaBroker

from reag.corpus.model import Document
from reag.elicitation.directory import PersonaDirectory
from reag.llm.client import LLMClient
from reag.llm.scripted import FakeProvider
from reag.retrieval.icralm import IcralmKernel
from reag.retrieval.retriever import Retriever, RetrieverConfig
from reag.retrieval.score_cache import CachedScore, ScoreCache
from reag.traffic.policy import PolicyDirectory, TrafficPolicy
from reag.traffic.shadow import ShadowGate, no_spend
from reag.v1 import events_pb2 as pb
from services.elicitor.handlers import build_router as elicitor_router
from services.elicitor.otlp import build_otlp_router
from services.elicitor.settings import ElicitorSettings
from services.kit.settings import DeliverySettings
from services.kit.topology import DLQ, INTENTIONS, INTERPRETATIONS, OTLP_SPANS, TRAFFIC
from services.retriever.handlers import RetrieverDeps
from services.retriever.handlers import build_router as retriever_router
from services.retriever.settings import RetrieverSettings
from tests.fuzz_consumers import APP, CORPUS, good_event, good_spans

SUFFIX = "-offloop"


def off_the_loop() -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise AssertionError("a store was called on the event loop")


class OffLoopPolicies:
    def get(self, app: str) -> TrafficPolicy:
        off_the_loop()
        return TrafficPolicy()


def personas() -> PersonaDirectory:
    def documents(app: str) -> list[Document]:
        off_the_loop()
        return [d for d in CORPUS if d.app == app and d.kind == "persona"]

    def knows(app: str) -> bool:
        off_the_loop()
        return app == APP

    return PersonaDirectory(documents, knows, ttl_s=0.0)


async def run(
    router: KafkaRouter, topic: str, values: Sequence[bytes], out: str
) -> tuple[int, list[str]]:
    broker = KafkaBroker()
    broker.include_router(router)
    outputs: list[bytes] = []
    letters: list[str] = []

    @broker.subscriber(out, group_id="offloop-out")
    async def keep(body: bytes) -> None:
        outputs.append(body)

    @broker.subscriber(DLQ, group_id="offloop-dlq")
    async def keep_letter(body: bytes) -> None:
        letters.append(pb.DeadLetter.FromString(body).error_type)

    async with TestKafkaBroker(broker) as test_broker:
        for value in values:
            await test_broker.publish(value, topic)
    return len(outputs), letters


def unknown_app_traffic() -> bytes:
    event = good_event("Traffic", "off-2")
    assert isinstance(event, pb.Traffic)
    event.meta.app = "nobody"
    return event.SerializeToString()


async def test_the_elicitor_reads_personas_and_policies_off_the_loop() -> None:
    policies = PolicyDirectory(OffLoopPolicies(), ttl_s=0.0)
    # No parking, so the unknown app's event ends as its dead letter within the test.
    settings = ElicitorSettings(topic_suffix=SUFFIX, delivery=DeliverySettings(park_s=0))
    router = elicitor_router(settings, personas(), policies, ShadowGate(no_spend))
    values = [good_event("Traffic", "off-1").SerializeToString(), unknown_app_traffic()]
    outputs, letters = await run(router, TRAFFIC + SUFFIX, values, INTENTIONS + SUFFIX)
    assert (outputs, letters) == (1, ["app_not_loaded"])


async def test_the_otlp_router_reads_apps_and_policies_off_the_loop() -> None:
    policies = PolicyDirectory(OffLoopPolicies(), ttl_s=0.0)
    router = build_otlp_router(ElicitorSettings(topic_suffix=SUFFIX), policies, personas().knows)
    values = [good_spans("off-3").SerializeToString()]
    outputs, letters = await run(router, OTLP_SPANS + SUFFIX, values, TRAFFIC + SUFFIX)
    assert (outputs, letters) == (1, [])


class OffLoopScoreCache(ScoreCache):
    def get(self, model: str, context: str, target: str) -> CachedScore | None:
        off_the_loop()
        return super().get(model, context, target)

    def put(
        self, model: str, context: str, target: str, *, mean: float, n_tokens: int, latency_s: float
    ) -> None:
        off_the_loop()
        super().put(model, context, target, mean=mean, n_tokens=n_tokens, latency_s=latency_s)


async def test_the_retriever_reads_the_corpus_and_the_score_cache_off_the_loop(
    tmp_path: Path,
) -> None:
    def documents(app: str) -> list[Document]:
        off_the_loop()
        return [d for d in CORPUS if d.app == app]

    retriever = Retriever(RetrieverConfig(kernel="bm25", selection="fixed", k=2))
    router = retriever_router(
        RetrieverSettings(topic_suffix=SUFFIX), RetrieverDeps(retriever, None, documents)
    )
    values = [good_event("Intention", "off-4").SerializeToString()]
    outputs, letters = await run(router, INTENTIONS + SUFFIX, values, INTERPRETATIONS + SUFFIX)
    assert (outputs, letters) == (1, [])

    cache = OffLoopScoreCache(tmp_path / "scores.sqlite")
    provider = FakeProvider(score_script=lambda context, _target: [-len(context) / 100.0])
    kernel = IcralmKernel(LLMClient(provider), cache=cache)
    intention = good_event("Intention", "off-5")
    assert isinstance(intention, pb.Intention)
    first = await kernel.score(intention, CORPUS)
    again = await kernel.score(intention, CORPUS)
    assert first == again
    assert kernel.stats.cache_hits == len(CORPUS)
