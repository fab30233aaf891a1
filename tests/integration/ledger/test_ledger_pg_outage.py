"""PostgreSQL outage at the ledger, short version: the TCP proxy in front of the machine's
PostgreSQL is cut for a few seconds while tens of cases arrive; every result lands after
it, none doubled, none dead-lettered (the 60 s run is ``python -m bench.chaos pg-outage``)."""

from __future__ import annotations

import pytest

from bench.chaos.pg_outage import run_outage
from services.kit.settings import DeliverySettings

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.slow]


async def test_events_met_by_a_database_outage_land_after_it_once_each(
    kafka_bootstrap: str,
) -> None:
    counts = await run_outage(
        kafka_bootstrap,
        cases=24,
        outage_s=4.0,
        rate_per_s=6.0,
        delivery=DeliverySettings(retry_initial_s=0.3, retry_max_s=2.0),
        settle_s=120.0,
    )
    assert counts.database_retries > 0  # the outage met events in flight
    assert counts.results_out == counts.cases_in == 24
    assert counts.doubled == 0
    assert counts.dead_letters == 0
