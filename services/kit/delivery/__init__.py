"""The one way a reag service consumes a topic: decode, guard, handle, emit, commit.

One file per job: ``outputs`` (what a handler emits), ``runner`` (one try at one
event), ``dead_letters`` (what a letter keeps, written without looping), ``tries``
(per-event state: tries, first fault, backoff), ``park`` (events of apps not loaded
yet, bounded by count and bytes), ``inflight`` (unfinished offsets, done prefixes,
epochs, one key's turn), ``offsets`` (events in flight, commits, pause and resume,
the park's drain, forgetting revoked partitions), ``subscription`` (the ``consume``
decorator, the group and the rebalance listener).

Delivery rules (docs/pipeline.md and docs/architecture.md, "Delivery"):
- up to ``DeliverySettings.max_in_flight`` events of one subscriber at once, each in
  its own task; events with the same key one after another, in offset order;
- at-least-once: an offset is committed only after every output of its event (or
  its dead letter) has been acknowledged by the cluster (acks=all), and only as
  the prefix of the partition's offsets that are done; work of a revoked partition
  never moves its commit;
- a transient fault (``services.kit.faults``: database, broker, LLM outage, a
  spent budget) does not dead-letter at once: the partition is paused and the event
  tried again in its task after an exponential backoff, while the consumer goes on
  polling its other partitions, so the group keeps it and the max poll interval is
  never exceeded; an event whose tries
  met transient faults ``DeliverySettings.max_transient_attempts`` times, or for
  ``max_transient_s``, is dead-lettered as ``transient_exhausted`` (replayable);
- an event whose app has no corpus yet is parked for ``DeliverySettings.park_s``
  and retried without holding back the events behind it, then dead-lettered as
  ``app_not_loaded``; a parked event holds back its partition's committed offset,
  so a crash redelivers it; the park is bounded by events and by bytes;
- nothing is dropped silently: an input that can never be processed (bad
  bytes, missing fields, oversized, unknown schema version, LLM output still
  invalid after repair, a bug) becomes a dead letter on ``reag.dlq.v1`` with
  the original bytes and a reason, and is committed; a letter too large is cut
  to fit, never looped;
- outputs are keyed by the case id, so a redelivered input produces outputs
  that downstream consumers recognise as duplicates.

Handlers never see Kafka; the topology they may publish to is ``topology.SERVICES``.
"""

from services.kit.delivery.offsets import Delivery
from services.kit.delivery.outputs import CONTENT_TYPE, Emit
from services.kit.delivery.subscription import consume
from services.kit.delivery.tries import backoff
from services.kit.faults import UndeclaredTopicError

__all__ = ["CONTENT_TYPE", "Delivery", "Emit", "UndeclaredTopicError", "backoff", "consume"]
