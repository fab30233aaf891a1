"""The ledger's handlers: each event is recorded, and the case's result goes out when it
is complete or has changed (``LedgerStore`` decides; see its delivery notes).

Writes go through one ``GroupCommit`` for all four topics: the events that arrive while
a transaction runs are written together in the next (``reag.ledger.batching``). Store
calls run in a worker thread so the gRPC API, which shares this event loop, keeps
answering while a write waits for the database.
"""

from __future__ import annotations

from collections.abc import Callable

from faststream.kafka import KafkaRouter

from reag.ledger.batching import GroupCommit
from reag.ledger.store import LedgerEvent, LedgerStore, LedgerUpdate
from reag.v1 import events_pb2 as pb
from services.kit.delivery import Emit, consume
from services.kit.faults import Transient, classify
from services.kit.topology import ABSTAINS, ORACLES, RESULTS, REVIEWS, SERVICES, VERDICTS, suffixed
from services.ledger.settings import LedgerSettings


def build_router(settings: LedgerSettings, store: LedgerStore) -> KafkaRouter:
    suffix = settings.topic_suffix
    spec = suffixed(SERVICES["ledger"], suffix)
    router = KafkaRouter()
    results_topic = RESULTS + suffix
    # A batch that failed on a database outage fails all its events (each is retried);
    # any other failure may be one event's own, so its events are written one by one.
    writes: GroupCommit[LedgerEvent, LedgerUpdate] = GroupCommit(
        store.record_many,
        max_batch=settings.ledger_batch_max,
        alone=lambda exc: not isinstance(classify(exc), Transient),
    )

    def subscribe(
        topic: str,
        event_type: type[pb.Oracle] | type[pb.Verdict] | type[pb.Abstain] | type[pb.Review],
    ) -> Callable[..., object]:
        # One consumer group per topic: instances still share each topic's partitions, but
        # the four consumers of one process do not rebalance each time one of them joins
        # (on Tansu a shared group took ~30 s to settle). A suffixed run gets its own groups,
        # so runs sharing a broker never rebalance together.
        return consume(
            router,
            spec,
            topic + suffix,
            event_type,
            max_event_bytes=settings.kafka.max_event_bytes,
            delivery=settings.delivery,
            group_id=f"{spec.name}{suffix}-{topic}",
        )

    def emit(update: LedgerUpdate) -> Emit | None:
        if not update.publish:
            return None
        return Emit(results_topic, update.result, update.result.meta.case_id)

    @subscribe(ORACLES, pb.Oracle)
    async def record_oracle(event: pb.Oracle) -> Emit | None:
        return emit(await writes.write(event))

    @subscribe(VERDICTS, pb.Verdict)
    async def record_verdict(event: pb.Verdict) -> Emit | None:
        return emit(await writes.write(event))

    @subscribe(ABSTAINS, pb.Abstain)
    async def record_abstain(event: pb.Abstain) -> Emit | None:
        # An accepted audit's copy for review is stored too: it carries the cost of the tiers
        # that scored it after the deciding one, and never counts as an abstention.
        return emit(await writes.write(event))

    @subscribe(REVIEWS, pb.Review)
    async def record_review(event: pb.Review) -> Emit | None:
        return emit(await writes.write(event))

    return router
