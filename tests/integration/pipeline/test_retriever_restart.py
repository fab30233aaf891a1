"""A retriever process killed with SIGKILL mid-stream and restarted loses no intention.

The retriever runs as its own process (``python -m services.retriever``),
configured only by environment variables, with a cheap real retrieval
configuration: BM25 ranking over the example corpus in a SQLite store, no
self-reasoning, so no language model is loaded. At-least-once delivery means
count in = count out by distinct case id; duplicates are allowed (outputs are
keyed by case id, downstream dedups).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import uuid
from asyncio.subprocess import Process
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from reag.corpus.model import Document
from reag.corpus.store import CorpusStore
from reag.retrieval.intention import make_intention
from reag.v1 import events_pb2 as pb
from services.kit.admin import ensure_topics
from services.kit.settings import KafkaSettings
from services.kit.topology import INTENTIONS, INTERPRETATIONS
from shell.stack.ports import free_port

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

N_INTENTIONS = 200
KILL_AFTER = 40
ROOT = Path(__file__).parents[3]


class Watcher:
    """Reads a topic in the background (no consumer group) and keeps the case ids seen."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id=None
        )
        self.case_ids: list[str] = []
        self._arrived = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Watcher:
        await self.consumer.start()
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        await self.consumer.stop()

    async def _run(self) -> None:
        while True:
            batch = await self.consumer.getmany(timeout_ms=200)
            for records in batch.values():
                self.case_ids += [
                    pb.Interpretation.FromString(r.value).meta.case_id for r in records
                ]
            if batch:
                self._arrived.set()

    async def wait_for(self, wanted: set[str], n: int, timeout_s: float) -> int:
        """Until ``n`` of ``wanted`` have been seen; returns how many were."""
        async with asyncio.timeout(timeout_s):
            while len(wanted.intersection(self.case_ids)) < n:
                self._arrived.clear()
                await self._arrived.wait()
        return len(wanted.intersection(self.case_ids))


def retriever_env(tmp_path: Path, bootstrap: str, suffix: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REAG_")}
    return env | {
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
        "REAG_STATE_DIR": str(tmp_path),
        "REAG_KAFKA__BOOTSTRAP_SERVERS": bootstrap,
        "REAG_TOPIC_SUFFIX": suffix,
        "REAG_RETRIEVAL__KERNEL": "bm25",
        "REAG_SELF_REASONING": "false",
        "REAG_HTTP_PORT": str(free_port()),
        "REAG_LOG_LEVEL": "WARNING",
    }


@contextlib.asynccontextmanager
async def retriever_process(env: dict[str, str], log: Path) -> AsyncIterator[Process]:
    with log.open("ab") as out:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "services.retriever",
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
        )
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), timeout=10)
            except TimeoutError:
                proc.kill()
                await proc.wait()


def intention(case_id: str, index: int) -> bytes:
    queries = [
        "Is this coconut water OK on dialysis?",
        "Can I eat this bar before a marathon?",
        "Is this cheese safe in pregnancy?",
        "How much salt is in this soup?",
    ]
    event = make_intention(
        queries[index % len(queries)],
        app="nutrition",
        case_id=case_id,
        persona_id="ckd",
        persona_name="Chronic kidney disease",
    )
    return event.SerializeToString()


async def test_a_retriever_killed_mid_stream_and_restarted_loses_no_intention(
    kafka_bootstrap: str,
    tmp_path: Path,
    example_corpus: list[Document],
) -> None:
    suffix = f".{uuid.uuid4().hex[:10]}"
    await ensure_topics(KafkaSettings(bootstrap_servers=kafka_bootstrap), suffix)
    CorpusStore.open(f"sqlite:///{tmp_path / 'reag.db'}").add("nutrition", example_corpus)
    env = retriever_env(tmp_path, kafka_bootstrap, suffix)
    log = tmp_path / "retriever.log"
    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
    await producer.start()
    warm_up = f"warm-{suffix}"
    cases = [f"kill{suffix}-{i:03d}" for i in range(N_INTENTIONS)]

    async def produce() -> None:
        for index, case_id in enumerate(cases):
            await producer.send_and_wait(
                INTENTIONS + suffix, intention(case_id, index), key=case_id.encode()
            )
            await asyncio.sleep(0.01)  # a stream, not a burst: the kill lands inside it

    try:
        async with Watcher(kafka_bootstrap, INTERPRETATIONS + suffix) as watcher:
            async with retriever_process(env, log) as first:
                await producer.send_and_wait(INTENTIONS + suffix, intention(warm_up, 0))
                await watcher.wait_for({warm_up}, 1, timeout_s=90)
                feeding = asyncio.create_task(produce())
                seen_at_kill = await watcher.wait_for(set(cases), KILL_AFTER, timeout_s=60)
                first.send_signal(signal.SIGKILL)
                assert await first.wait() == -signal.SIGKILL
            assert seen_at_kill < N_INTENTIONS, "the kill must land before the stream ends"
            await feeding
            async with retriever_process(env, log) as second:
                await watcher.wait_for(set(cases), N_INTENTIONS, timeout_s=120)
                assert second.returncode is None
    except TimeoutError:
        pytest.fail(
            "not every intention came out; retriever log:\n"
            + log.read_text(errors="replace")[-3000:]
        )
    finally:
        await producer.stop()

    out = [c for c in watcher.case_ids if c in set(cases)]
    assert set(out) == set(cases)  # count in = count out, by distinct case id
    assert len(out) >= N_INTENTIONS  # duplicates (redelivered, uncommitted) are allowed
