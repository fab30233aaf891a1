"""The ledger and the review tool over a real Kafka-protocol broker (Tansu, on a socket)."""

from __future__ import annotations

import asyncio
import io
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TypeVar

import pytest
import typer
from google.protobuf.message import Message
from typer.testing import CliRunner

from reag.ledger.outcome import is_reviewed, reviewer_of
from reag.ledger.store import LedgerStore
from reag.review.labels import ScriptedLabeler
from reag.review.session import review_loop
from reag.v1 import events_pb2 as pb
from services.kit.admin import ensure_topics
from services.kit.broker import make_broker
from services.kit.settings import KafkaSettings
from services.kit.testing import produce_events as produce
from services.kit.testing import read_events
from services.kit.topology import ABSTAINS, ORACLES, RESULTS, REVIEWS, VERDICTS
from services.ledger.handlers import build_router
from services.ledger.settings import LedgerSettings
from shell.cli import review as review_cli
from shell.kafka_io.review import KafkaReviewIO
from tests.unit.ledger.conftest import TIER_COSTS, YES, Events

pytestmark = [pytest.mark.kafka]

M = TypeVar("M", bound=Message)


async def results_until(bootstrap: str, topic: str, case_id: str, n: int) -> list[pb.Result]:
    """The results of one case, once ``n`` have been published (or the time is up)."""

    def mine(results: list[pb.Result]) -> list[pb.Result]:
        return [r for r in results if r.meta.case_id == case_id]

    return mine(await read_events(bootstrap, topic, pb.Result, lambda rs: len(mine(rs)) >= n))


@pytest.fixture(scope="module")
async def ledger(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[LedgerSettings, LedgerStore]]:
    """One running ledger for this module (its four consumer groups take ~20 s to join on
    Tansu), on topics of its own, its store in a fresh SQLite file; tests use distinct cases."""
    topic_suffix = uuid.uuid4().hex[:10]
    tmp_path = tmp_path_factory.mktemp("ledger")
    settings = LedgerSettings(
        kafka=KafkaSettings(bootstrap_servers=kafka_bootstrap), topic_suffix=topic_suffix
    )
    await ensure_topics(settings.kafka, topic_suffix)
    store = LedgerStore.open(f"sqlite:///{tmp_path / 'ledger.db'}")
    broker = make_broker(settings.kafka, "ledger")
    broker.include_router(build_router(settings, store))
    async with broker:
        await broker.start()
        yield settings, store
    store.close()


async def test_a_redelivered_verdict_is_counted_once(
    kafka_bootstrap: str, ledger: tuple[LedgerSettings, LedgerStore]
) -> None:
    settings, store = ledger
    suffix = settings.topic_suffix
    ev = Events(case_id=f"nutrition-redelivered-{suffix}", n=2)
    await produce(kafka_bootstrap, ORACLES + suffix, [ev.oracle()], ev.case_id)
    twice = ev.verdict(0, YES, tier=3)
    await produce(
        kafka_bootstrap, VERDICTS + suffix, [ev.verdict(1, YES), twice, twice], ev.case_id
    )

    seen = await results_until(kafka_bootstrap, RESULTS + suffix, ev.case_id, 2)
    expected_cost = TIER_COSTS[0] + sum(TIER_COSTS)
    assert len(seen) == 2  # complete, then republished once for the redelivery
    final = seen[-1]
    assert final.meta.case_id == ev.case_id
    assert final.outcome == pb.OUTCOME_PASS
    assert final.complete
    assert len(final.criteria) == 2
    assert final.total_cost_usd == pytest.approx(expected_cost)
    assert seen[0] == final  # the republished result is the same result
    stored = store.get_result(ev.case_id)
    assert stored == final
    assert [r.meta.case_id for r in store.list_results()].count(ev.case_id) == 1


async def test_an_abstain_reviewed_with_reag_review_updates_the_result(
    kafka_bootstrap: str, ledger: tuple[LedgerSettings, LedgerStore], tmp_path: Path
) -> None:
    settings, store = ledger
    suffix = settings.topic_suffix
    ev = Events(case_id=f"nutrition-reviewed-{suffix}", n=2)
    await produce(kafka_bootstrap, VERDICTS + suffix, [ev.verdict(0, YES)], ev.case_id)
    await produce(kafka_bootstrap, ABSTAINS + suffix, [ev.abstain(1)], ev.case_id)
    first = await results_until(kafka_bootstrap, RESULTS + suffix, ev.case_id, 1)
    assert [r.outcome for r in first] == [pb.OUTCOME_ABSTAIN]
    assert list(first[0].open_criteria) == [ev.cid(1)]

    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        json.dumps({"criterion_id": ev.cid(1), "label": "YES", "comment": "fine for a diabetic"})
        + "\n"
    )
    group = f"review-{suffix}"
    output = io.StringIO()
    async with KafkaReviewIO(settings, group=group) as kafka:
        stats = await review_loop(
            kafka,
            kafka,
            ScriptedLabeler.from_file(labels),
            output,
            reviewer="ann",
            idle_timeout_s=30.0,
        )
    assert (stats.labelled, stats.stopped_by) == (1, "labels used up")
    assert "App response (untrusted, shown verbatim):\n  │ Pasta with cream." in output.getvalue()

    seen = await results_until(kafka_bootstrap, RESULTS + suffix, ev.case_id, 2)
    final = seen[-1]
    assert final.outcome == pb.OUTCOME_PASS
    assert list(final.open_criteria) == []
    reviewed = final.criteria[1]
    assert is_reviewed(reviewed)
    assert reviewer_of(reviewed) == "ann"
    assert [a.tier for a in reviewed.history] == [1, 2, 3, 0]  # machine history kept
    assert store.get_result(ev.case_id) == final
    (stored_review,) = store.reviews(ev.cid(1))
    assert stored_review.comment == "fine for a diabetic"
    assert stored_review.item.criterion.criterion_id == ev.cid(1)

    # The label was committed: the same group finds nothing left to review.
    again = io.StringIO()
    async with KafkaReviewIO(settings, group=group) as kafka:
        stats = await review_loop(
            kafka,
            kafka,
            ScriptedLabeler.from_file(labels),
            again,
            reviewer="ann",
            idle_timeout_s=4.0,
        )
    assert (stats.shown, stats.stopped_by) == (0, "timeout")

    published = await read_events(
        kafka_bootstrap, REVIEWS + suffix, pb.Review, lambda rs: len(rs) >= 1, timeout_s=10.0
    )
    assert [(r.criterion_id, r.label, r.reviewer) for r in published] == [(ev.cid(1), YES, "ann")]


async def test_reag_review_command_labels_from_a_file(
    kafka_bootstrap: str, ledger: tuple[LedgerSettings, LedgerStore], tmp_path: Path
) -> None:
    settings, _ = ledger
    suffix = settings.topic_suffix
    ev = Events(case_id=f"nutrition-cli-{suffix}", n=1)
    await produce(kafka_bootstrap, ABSTAINS + suffix, [ev.abstain(0)], ev.case_id)
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"criterion_id": ev.cid(0), "label": "NO"}) + "\n")
    cli = typer.Typer()
    cli.callback()(lambda: None)  # a group, so "review" is a subcommand as in `reag`
    review_cli.register(cli)
    env = {"REAG_KAFKA__BOOTSTRAP_SERVERS": kafka_bootstrap, "REAG_TOPIC_SUFFIX": suffix}
    args = [
        "review",
        "--labels-from",
        str(labels),
        "--reviewer",
        "ci",
        "--timeout",
        "20",
        "--group",
        f"cli-{suffix}",
    ]
    # The command runs its own event loop, so it gets a thread of its own.
    out = await asyncio.to_thread(CliRunner().invoke, cli, args, env=env)
    assert out.exit_code == 0, out.output
    assert f"labelled {ev.cid(0)} NO as ci" in out.output
    assert "done (labels used up): 1 labelled" in out.output

    seen = await results_until(kafka_bootstrap, RESULTS + suffix, ev.case_id, 2)
    assert [r.outcome for r in seen] == [pb.OUTCOME_ABSTAIN, pb.OUTCOME_FAIL]
    assert reviewer_of(seen[-1].criteria[0]) == "ci"
