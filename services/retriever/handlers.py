"""The retriever's one handler: ``pb.Intention`` -> ``pb.Interpretation``, keyed by case id."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from faststream.kafka import KafkaRouter

from reag.corpus.model import Document
from reag.retrieval.reasoning import SelfReasoner
from reag.retrieval.retriever import Retrieval, Retriever
from reag.v1 import events_pb2 as pb
from services.kit.delivery import Emit, consume
from services.kit.faults import AppNotLoadedError
from services.kit.topology import INTENTIONS, INTERPRETATIONS, SERVICES, suffixed
from services.retriever.settings import RetrieverSettings


@dataclass(frozen=True, slots=True)
class RetrieverDeps:
    retriever: Retriever
    reasoner: SelfReasoner | None  # None: self-reasoning is off
    documents: Callable[[str], Sequence[Document]]  # the app's corpus ([] if unknown)


def unreasoned(intention: pb.Intention, retrieval: Retrieval) -> pb.Interpretation:
    """The selected documents as ranked, with no relevance verdicts, evidence or analysis."""
    interpretation = pb.Interpretation(
        intention=intention,
        k=retrieval.k,
        buffer=retrieval.buffer,
        kernel=retrieval.kernel,
        n_candidates=retrieval.n_candidates,
        documents=[
            pb.RetrievedDocument(
                doc_id=r.document.address,
                kind=r.document.kind,
                title=r.document.title,
                score=r.score,
                rank=r.rank,
                content=r.document.content,
            )
            for r in retrieval.selected
        ],
    )
    interpretation.meta.CopyFrom(intention.meta)
    return interpretation


def build_router(settings: RetrieverSettings, deps: RetrieverDeps) -> KafkaRouter:
    suffix = settings.topic_suffix
    spec = suffixed(SERVICES["retriever"], suffix)
    router = KafkaRouter()

    @consume(
        router,
        spec,
        INTENTIONS + suffix,
        pb.Intention,
        max_event_bytes=settings.kafka.max_event_bytes,
        delivery=settings.delivery,
        app_known=lambda app: bool(deps.documents(app)),
    )
    async def interpret(event: pb.Intention) -> Emit:
        documents = await asyncio.to_thread(deps.documents, event.meta.app)
        if not documents:
            raise AppNotLoadedError(event.meta.app)
        retrieval = await deps.retriever.retrieve(event, documents)
        if deps.reasoner is None:
            interpretation = unreasoned(event, retrieval)
        else:
            interpretation = (await deps.reasoner.interpret(event, retrieval)).interpretation
        return Emit(INTERPRETATIONS + suffix, interpretation, event.meta.case_id)

    return router
