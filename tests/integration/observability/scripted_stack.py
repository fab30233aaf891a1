"""Every reag service in one process, scripted models, /metrics over HTTP: what Prometheus scrapes.

``python -m tests.integration.observability.scripted_stack --bootstrap B --suffix S
--metrics-port P --state-dir D`` runs the real routers of the elicitor, retriever,
oracle, judge-tier1..3, ledger and calibrator, each on its own broker named as
the service (so FastStream's series carry it as ``app_name``), on topics
``<topic><S>`` of a real broker. The process-wide registry is served by
prometheus_client's HTTP server, the exposition production serves on ``/metrics``.
It writes ``<D>/ready`` once every broker has started and stops on SIGTERM.

A separate process, so that the series come only from this run and not from
whatever earlier tests left in the test process's registry.

The models are scripted (``FakeProvider``), priced through a price-table override
so that the cost series carry money: this exercises the telemetry, not judging.
Markers in a case's response set the judges' P(YES) (tests.integration.cascade.conftest):
SURE-YES and SURE-NO are accepted at tier 1, FAIRLY-SURE escalates once and is
accepted at tier 2, UNSURE escalates through all three tiers and is abstained.
The oracle's model answers the first call with a rate limit (one retry) and
refuses a query carrying ``REFUSE-ME`` outright (an LLM error, dead-lettered).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from faststream.kafka import KafkaBroker, KafkaRouter
from prometheus_client import start_http_server

from reag.calibration.store import CalibrationStore
from reag.corpus.loader import load_sources
from reag.corpus.manifest import load_manifest
from reag.elicitation.directory import PersonaDirectory
from reag.judging.identity import JudgeIdentity
from reag.judging.tier import JudgeTier
from reag.ledger.store import LedgerStore
from reag.llm.accounting import Caller
from reag.llm.base import InvalidRequestError, Message, RateLimitedError
from reag.llm.client import LLMClient
from reag.llm.scripted import SCRIPTED_CLAIMS, FakeProvider, oracle_answer
from reag.oracle.writer import OracleWriter
from reag.retrieval.reasoning import SelfReasoner
from reag.retrieval.retriever import Retriever, RetrieverConfig
from reag.traffic.policy import FixedPolicies, PolicyDirectory, ShadowPolicy, TrafficPolicy
from reag.traffic.shadow import ShadowGate, no_spend
from reag.v1 import events_pb2 as pb
from services.calibrator.handlers import build_router as calibrator_router
from services.calibrator.main import build_recalibrator
from services.calibrator.settings import CalibratorSettings
from services.elicitor.handlers import build_router as elicitor_router
from services.elicitor.settings import ElicitorSettings
from services.judge.handlers import build_router as judge_router
from services.judge.main import build_tier, load_thresholds
from services.judge.settings import JudgeSettings
from services.kit.broker import make_broker
from services.kit.settings import KafkaSettings
from services.kit.testing import produce_events
from services.kit.topology import THRESHOLDS
from services.ledger.handlers import build_router as ledger_router
from services.ledger.settings import LedgerSettings
from services.oracle.handlers import build_router as oracle_router
from services.oracle.settings import OracleSettings
from services.retriever.handlers import RetrieverDeps
from services.retriever.handlers import build_router as retriever_router
from services.retriever.settings import RetrieverSettings
from tests.integration.cascade.conftest import scripted_p_yes
from tests.integration.pipeline.scripted import reasoning_script

APP = "nutrition"
EXAMPLE_MANIFEST = Path(__file__).parents[3] / "examples/nutrition/app.yaml"
N_CRITERIA = 2
REFUSE = "REFUSE-ME"
# Cases admitted per minute; traffic beyond it is shed as rate_limited.
MAX_CASES_PER_MINUTE = 9
# Thresholds in force at start: SURE-* pass tier 1, FAIRLY-SURE (0.8) tier 2, none at tier 3.
INITIAL_THRESHOLDS = {1: 0.95, 2: 0.75, 3: None}
RECALIBRATE_EVERY = 12
# USD per million tokens for the scripted models: cost series must carry money.
PRICES = {"models": {"fake:*": {"input": 0.4, "cached_input": 0.1, "output": 1.6}}}


class OracleScript:
    """Two criteria per oracle; a rate limit on the first call; a refusal for REFUSE-ME."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, messages: Sequence[Message], _options: dict[str, Any]) -> str:
        self.calls += 1
        if self.calls == 1:
            raise RateLimitedError("scripted: slow down")
        if any(REFUSE in m.content for m in messages):
            raise InvalidRequestError("scripted: the provider refuses this request")
        return oracle_answer(messages, SCRIPTED_CLAIMS[:N_CRITERIA])


def tier_client(tier: int, service: str) -> LLMClient:
    provider = FakeProvider(model=f"fake:tier{tier}", label_script=scripted_p_yes)
    return LLMClient(provider, Caller(service, str(tier)))


async def initial_thresholds(deps: dict[int, JudgeTier]) -> list[pb.Threshold]:
    """The thresholds as the calibrator would have published them: fitted on these judges."""
    found = []
    for tier, value in INITIAL_THRESHOLDS.items():
        threshold = pb.Threshold(
            app=APP,
            tier=tier,
            model=f"fake:tier{tier}",
            has_threshold=value is not None,
            alpha=0.1,
            delta=0.1,
            mode="cascade",
        )
        if value is None:
            threshold.reason = "scripted: no threshold"
        else:
            threshold.threshold = value
        threshold.computed_at.seconds = 1_000
        judge = await deps[tier].judge_for(APP)
        JudgeIdentity.of_judge(judge).stamp(threshold)
        found.append(threshold)
    return found


async def run(bootstrap: str, suffix: str, metrics_port: int, state_dir: Path) -> None:
    kafka = KafkaSettings(bootstrap_servers=bootstrap)
    shared: dict[str, Any] = {"kafka": kafka, "topic_suffix": suffix}
    manifest = load_manifest(EXAMPLE_MANIFEST)
    corpus = {APP: load_sources(manifest.corpus_paths(), manifest.name)}
    personas = PersonaDirectory(
        lambda app: [d for d in corpus.get(app, []) if d.kind == "persona"],
        lambda app: app in corpus,
    )
    policy = TrafficPolicy(shadow=ShadowPolicy(max_cases_per_minute=MAX_CASES_PER_MINUTE))
    policies = PolicyDirectory(FixedPolicies({APP: policy}))
    calibration = CalibrationStore.open(f"sqlite:///{state_dir / 'calibration.db'}")
    ledger = LedgerStore.open(f"sqlite:///{state_dir / 'ledger.db'}")

    judges = {t: JudgeSettings(tier=t, **shared) for t in (1, 2, 3)}
    judge_deps = {t: build_tier(judges[t], tier_client(t, "judge"), calibration) for t in judges}
    await produce_events(
        bootstrap,
        THRESHOLDS + suffix,
        await initial_thresholds(judge_deps),
        lambda t: f"{APP}/{t.tier}",
    )
    for tier, settings in judges.items():
        await load_thresholds(settings, judge_deps[tier])

    routers: dict[str, KafkaRouter] = {
        "elicitor": elicitor_router(
            ElicitorSettings.model_validate(shared), personas, policies, ShadowGate(no_spend)
        ),
        "retriever": retriever_router(
            RetrieverSettings.model_validate(shared),
            RetrieverDeps(
                Retriever(RetrieverConfig(kernel="bm25", selection="fixed", k=3)),
                SelfReasoner(
                    LLMClient(
                        FakeProvider(model="fake:reasoner", chat_script=reasoning_script),
                        Caller("retriever"),
                    )
                ),
                lambda app: corpus.get(app, []),
            ),
        ),
        "oracle": oracle_router(
            OracleSettings.model_validate(shared),
            OracleWriter(
                LLMClient(
                    FakeProvider(model="fake:oracle", chat_script=OracleScript()),
                    Caller("oracle"),
                )
            ),
        ),
        **{f"judge-tier{t}": judge_router(judges[t], judge_deps[t]) for t in judges},
        "ledger": ledger_router(LedgerSettings.model_validate(shared), ledger),
        "calibrator": calibrator_router(
            calibrator := CalibratorSettings(
                **shared,
                recalibrate_every=RECALIBRATE_EVERY,
                alpha=0.25,
                delta=0.1,
                min_accepted=RECALIBRATE_EVERY // 4,
            ),
            build_recalibrator(
                calibrator, calibration, [tier_client(t, "calibrator") for t in (1, 2, 3)]
            ),
        ),
    }
    brokers: list[KafkaBroker] = []
    for service, router in routers.items():
        broker = make_broker(kafka, service)
        broker.include_router(router)
        brokers.append(broker)
    start_http_server(metrics_port, addr="127.0.0.1")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    try:
        await asyncio.gather(*(broker.start() for broker in brokers))
        (state_dir / "ready").write_text("ready\n")
        await stop.wait()
    finally:
        for broker in brokers:
            await broker.stop()
        ledger.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--suffix", required=True)
    parser.add_argument("--metrics-port", type=int, required=True)
    parser.add_argument("--state-dir", type=Path, required=True)
    args = parser.parse_args()
    prices = args.state_dir / "prices.json"
    prices.write_text(json.dumps(PRICES))
    # LLMSettings reads these; every client of the process gets them.
    import os

    os.environ["REAG_LLM_PRICES_FILE"] = str(prices)
    os.environ["REAG_LLM_BUDGET_USD"] = "1000"
    os.environ["REAG_LLM_BACKOFF_INITIAL_S"] = "0.05"
    asyncio.run(run(args.bootstrap, args.suffix, args.metrics_port, args.state_dir))


if __name__ == "__main__":
    main()
