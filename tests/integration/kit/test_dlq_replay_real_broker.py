"""``reag dlq list|show|replay`` round trip over the real broker: a parked event that ran out
of time is replayed once its app is loaded, and a ledger event replayed twice is one result."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from faststream.kafka import KafkaRouter
from typer.testing import CliRunner

from reag.ledger.store import LedgerEvent, LedgerStore, LedgerUpdate
from reag.v1 import events_pb2 as pb
from services.kit.admin import ensure_topics
from services.kit.broker import make_broker
from services.kit.delivery import Emit, consume
from services.kit.settings import DeliverySettings, KafkaSettings
from services.kit.testing import produce_events, read_events, read_values
from services.kit.topology import (
    DLQ,
    INTENTIONS,
    ORACLES,
    RESULTS,
    TRAFFIC,
    VERDICTS,
    ServiceSpec,
)
from services.ledger.handlers import build_router as ledger_router
from services.ledger.settings import LedgerSettings
from shell.cli.main import app as reag
from tests.unit.ledger.conftest import YES, Events

pytestmark = [pytest.mark.kafka]

DELIVERY = DeliverySettings(retry_initial_s=0.2, retry_max_s=1.0, park_s=0.5)
SECRET_QUERY = "my private question about my kidneys"


class OnceBrokenStore(LedgerStore):
    """A ledger store with a bug in recording verdicts until ``broken`` is cleared (the
    fix), whether the verdict comes in a batch or alone (the ledger writes by group
    commit, and writes a failed batch's events again one by one)."""

    broken = True

    def record_many(self, events: Sequence[LedgerEvent]) -> list[LedgerUpdate]:
        if self.broken and any(isinstance(e, pb.Verdict) for e in events):
            raise KeyError("a bug that is fixed by the time of the replay")
        return super().record_many(events)


def reag_cli(*args: str) -> Any:
    """The CLI in a thread: its commands run their own event loop."""
    return asyncio.to_thread(CliRunner().invoke, reag, list(args))


async def letters_of(bootstrap: str, key_prefix: str, n: int) -> list[pb.DeadLetter]:
    def mine(values: list[bytes]) -> list[pb.DeadLetter]:
        letters = [pb.DeadLetter.FromString(v) for v in values]
        return [x for x in letters if x.key.decode().startswith(key_prefix)]

    return mine(await read_values(bootstrap, DLQ, lambda vs: len(mine(vs)) >= n))


async def test_dlq_list_show_and_replay_round_trip(
    kafka_bootstrap: str, topic_suffix: str, tmp_path: Path
) -> None:
    kafka = KafkaSettings(bootstrap_servers=kafka_bootstrap)
    late_app, ledger_app = f"late-{topic_suffix}", f"ledger-{topic_suffix}"
    # Reag's own topic names: the app of a letter is read from the topic's payload type.
    inp, out = TRAFFIC + topic_suffix, INTENTIONS + topic_suffix
    await ensure_topics(kafka, topic_suffix)  # the ledger's topics and the shared DLQ
    loaded: set[str] = set()
    router = KafkaRouter()
    spec = ServiceSpec(f"svc-{topic_suffix}", consumes=(inp,), produces=(out,))

    @consume(
        router,
        spec,
        inp,
        pb.Traffic,
        max_event_bytes=4096,
        app_known=lambda app: app in loaded,
        delivery=DELIVERY,
    )
    async def to_intention(event: pb.Traffic) -> Emit:
        intention = pb.Intention(query=event.query)
        intention.meta.CopyFrom(event.meta)
        return Emit(out, intention, event.meta.case_id)

    store = OnceBrokenStore.open(f"sqlite:///{tmp_path / 'ledger.db'}")
    settings = LedgerSettings(kafka=kafka, topic_suffix=topic_suffix, delivery=DELIVERY)
    broker = make_broker(kafka, f"dlq-{topic_suffix}")
    broker.include_router(router)
    broker.include_router(ledger_router(settings, store))

    traffic = pb.Traffic(query=SECRET_QUERY, actual_response="r")
    late_case = f"{late_app}-1"
    traffic.meta.case_id, traffic.meta.app, traffic.meta.schema_version = late_case, late_app, 1
    ev = Events(case_id=f"{ledger_app}-1", app=ledger_app, n=1)
    async with broker:
        await broker.start()
        await produce_events(kafka_bootstrap, inp, [traffic], late_case)
        await produce_events(kafka_bootstrap, ORACLES + topic_suffix, [ev.oracle()], ev.case_id)
        await produce_events(
            kafka_bootstrap, VERDICTS + topic_suffix, [ev.verdict(0, YES)], ev.case_id
        )
        (parked_out,) = await letters_of(kafka_bootstrap, late_app, 1)
        (bug,) = await letters_of(kafka_bootstrap, ledger_app, 1)
        assert parked_out.error_type == "app_not_loaded"
        assert bug.error_type == "processing_error"

        listing = await reag_cli(
            "dlq", "list", "--app", late_app, "--bootstrap", kafka_bootstrap, "--json"
        )
        assert listing.exit_code == 0, listing.output
        (row,) = json.loads(listing.output)
        assert (row["error_type"], row["topic"], row["key"]) == ("app_not_loaded", inp, late_case)
        assert row["size_bytes"] == len(traffic.SerializeToString())
        assert SECRET_QUERY not in listing.output  # the payload is never printed
        shown = await reag_cli("dlq", "show", row["where"], "--bootstrap", kafka_bootstrap)
        assert shown.exit_code == 0, shown.output
        assert "reag dlq replay --reason app_not_loaded" in shown.output
        assert SECRET_QUERY not in shown.output

        # Nothing to replay for an app that does not exist; the corpus appears; replay.
        none = await reag_cli(
            "dlq", "replay", "--app", "nobody", "--bootstrap", kafka_bootstrap, "--json"
        )
        assert json.loads(none.output)["matched"] == 0
        loaded.add(late_app)
        replayed = await reag_cli(
            "dlq",
            "replay",
            "--reason",
            "app_not_loaded",
            "--app",
            late_app,
            "--since",
            "1h",
            "--bootstrap",
            kafka_bootstrap,
            "--json",
        )
        assert json.loads(replayed.output) == {
            "matched": 1,
            "replayed": 1,
            "not_replayable": 0,
            "dry_run": False,
            "by_topic": {inp: 1},
            "by_reason": {"app_not_loaded": 1},
        }
        outputs = await read_events(kafka_bootstrap, out, pb.Intention, lambda xs: len(xs) >= 1)
        assert [x.meta.case_id for x in outputs] == [late_case]

        # The ledger's bug is fixed; the verdict is replayed twice: one result, one row.
        store.broken = False
        for _ in range(2):
            again = await reag_cli(
                "dlq", "replay", "--app", ledger_app, "--bootstrap", kafka_bootstrap, "--json"
            )
            assert json.loads(again.output)["replayed"] == 1

        def of_case(results: list[pb.Result]) -> list[pb.Result]:
            return [r for r in results if r.meta.case_id == ev.case_id]

        results = of_case(
            await read_events(
                kafka_bootstrap, RESULTS + topic_suffix, pb.Result, lambda rs: len(of_case(rs)) >= 2
            )
        )
    assert results
    assert all(r.complete and r.outcome == pb.OUTCOME_PASS for r in results)
    assert [r.meta.case_id for r in store.list_results()].count(ev.case_id) == 1
    stored = store.get_result(ev.case_id)
    assert stored is not None
    assert len(stored.criteria) == 1
    store.close()
