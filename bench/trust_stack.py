"""Trust on the embedded stack: high audit rate, a scripted reviewer, then `reag trust --json`.

What it runs (all real parts: the Tansu broker, the local model server, the
judge, calibrator and ledger services, SQLite in a fresh state folder):

1. the example app's expert-labelled set is split (seeded): REAG_BENCH_TRUST_STACK_ITEMS
   items (default 40, never one of the annotators' pinned examples) are held
   out; the judges are calibrated on the rest (stored scores reused after
   the usual random re-judging), α = REAG_BENCH_TRUST_STACK_ALPHA (0.30, the
   demo's), δ = 0.1, and the thresholds are published;
2. the held-out items go to tier 1 as live criteria, with the judges' audit
   rate REAG_AUDIT_RATE = REAG_BENCH_TRUST_STACK_AUDIT_RATE (default 0.2);
3. a scripted reviewer stands in for people: it answers every abstained or
   audited criterion it is shown from the gold label of the held-out item
   (blind, like a person: the review tool shows it no tier verdict first);
4. once the calibrator has recorded the audits, `reag trust --app nutrition
   --json` is printed.

The local judge (Qwen2.5-Coder 1.5B, one annotator) takes about 10 s per
criterion on a 2-core machine, so the default run is small and will most
likely end in "insufficient audits"; raise the item count to see more. Ports
are REAG_KAFKA_PORT etc. (defaults below differ from `reag up`'s, so a demo
stack can keep running). Stops the stack it started.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import delete

from reag.fit_defaults import LOCAL_ALPHA
from reag.review.labels import Decision
from reag.v1 import events_pb2 as pb

APP_MANIFEST = Path("examples/nutrition/app.yaml")
PORTS = {
    "REAG_KAFKA_PORT": "19392",
    "REAG_MODEL_PORT": "19380",
    "REAG_SAMPLE_APP_PORT": "19381",
    "REAG_SERVICE_PORT_BASE": "19400",
}


class GoldReviewer:
    """Answers from the held-out items' expert labels; it stands in for people."""

    def __init__(self, gold: dict[str, pb.Label.ValueType]) -> None:
        self.gold = gold
        self.answered: set[str] = set()

    async def decide(self, abstain: pb.Abstain) -> Decision:
        criterion_id = abstain.request.criterion.criterion_id
        label = self.gold.get(criterion_id)
        if label is None:
            return Decision("skip")
        self.answered.add(criterion_id)
        return Decision("label", label, "scripted reviewer: the held-out item's gold label")

    def finished(self) -> bool:
        return False


def _env(name: str, default: str) -> str:
    return os.environ.get(name, default)


async def _calibrate_on_rest(
    app: str, held_out: int, seed: int, alpha: float, bootstrap: str
) -> list[tuple[pb.JudgeRequest, pb.Label.ValueType]]:
    """Calibrate on the labelled set less ``held_out`` items; return those items and labels."""
    from reag.apps import load_app
    from reag.calibration.store import CalibrationItemRow, CalibrationStore
    from reag.calibration_run.calibrate import calibrate_app
    from reag.calibration_run.clients import build_judges, make_tier_clients
    from reag.calibration_run.files import read_labelled
    from reag.calibration_run.fitting import FitSpec
    from reag.calibration_run.snapshot import import_snapshot
    from reag.judging.settings import CascadeSettings
    from services.calibrator.publish import publish_thresholds
    from services.kit.settings import KafkaSettings

    config = load_app(APP_MANIFEST)
    settings = CascadeSettings()
    store = CalibrationStore.open(settings.resolved_store_dsn())
    items = [
        i
        for i in read_labelled(config.resolve(config.calibration or "calibration.jsonl"))
        if i.app == app
    ]
    store.add_items(items)
    clients = make_tier_clients(settings, "bench")
    try:
        # The annotators' example sets are pinned on the whole set, as for the stored scores.
        judges = build_judges(store, app, clients, settings)
        pinned = {e.item_id for j in judges for s in j.annotators.sets for e in s}
        candidates = sorted(i.item_id for i in items if i.item_id not in pinned)
        out = set(random.Random(seed).sample(candidates, held_out))
        with store.sessions.begin() as session:
            session.execute(
                delete(CalibrationItemRow).where(
                    CalibrationItemRow.app == app, CalibrationItemRow.item_id.in_(out)
                )
            )
        rest = store.items(app)
        for judge in judges:
            report = await import_snapshot(
                store, app, judge, rest, config.resolve(config.calibration_scores or "scores")
            )
            if report is not None:
                print(f"  {report.line()}", flush=True)
        result = await calibrate_app(store, app, judges, FitSpec(alpha=alpha), trigger="cli")
    finally:
        for client in clients:
            await client.aclose()
    for t in result.thresholds:
        state = f"λ̂={t.threshold:.3f}" if t.has_threshold else f"none ({t.reason})"
        print(f"  tier {t.tier}: {state} on {t.n_calibration} items", flush=True)
    await publish_thresholds(KafkaSettings(bootstrap_servers=bootstrap), result.thresholds)
    return [
        (i.request, pb.LABEL_YES if i.label == "YES" else pb.LABEL_NO)
        for i in items
        if i.item_id in out
    ]


def _live(
    held: list[tuple[pb.JudgeRequest, pb.Label.ValueType]], run: str
) -> tuple[list[pb.JudgeRequest], dict[str, pb.Label.ValueType]]:
    """The held-out items as fresh live criteria, and each one's gold label by criterion id."""
    live, gold = [], {}
    for n, (item, label) in enumerate(held):
        request = pb.JudgeRequest()
        request.CopyFrom(item)
        del request.history[:]
        case = f"trust-{run}-{n:03d}"
        request.meta.case_id = case
        request.meta.run_id = f"trust-{run}"
        request.meta.schema_version = pb.SCHEMA_VERSION_1
        request.criterion.criterion_id = f"{case}/c0"
        request.criterion.index = 0
        request.oracle_id = f"{case}/oracle"
        request.n_criteria = 1
        live.append(request)
        gold[request.criterion.criterion_id] = label
    return live, gold


async def _send(requests: list[pb.JudgeRequest], bootstrap: str) -> None:
    from aiokafka import AIOKafkaProducer

    from services.kit.client_options import client_options
    from services.kit.delivery import CONTENT_TYPE
    from services.kit.settings import KafkaSettings
    from services.kit.topology import JUDGE_TIER

    kafka = KafkaSettings(bootstrap_servers=bootstrap)
    producer = AIOKafkaProducer(acks="all", **client_options(kafka))
    await producer.start()
    try:
        for r in requests:
            await producer.send_and_wait(
                JUDGE_TIER[1],
                r.SerializeToString(),
                key=r.meta.case_id.encode(),
                headers=[
                    ("content-type", CONTENT_TYPE.encode()),
                    ("x-reag-type", b"JudgeRequest"),
                ],
            )
    finally:
        await producer.stop()


async def _review(reviewer: GoldReviewer, idle_s: float) -> int:
    from reag.review.session import review_loop
    from services.kit.settings import ServiceSettings
    from shell.kafka_io.review import KafkaReviewIO

    async with KafkaReviewIO(ServiceSettings(), group="bench-trust") as kafka:
        stats = await review_loop(
            kafka, kafka, reviewer, io.StringIO(), reviewer="scripted-gold", idle_timeout_s=idle_s
        )
    return stats.labelled


async def _wait_for_audits(app: str, expected: int, timeout_s: float) -> int:
    from reag.calibration.store import CalibrationStore
    from reag.settings import ReagSettings
    from reag.trust.store import AuditStore

    store = CalibrationStore.open(ReagSettings().resolved_store_dsn())
    audits = AuditStore(store.sessions)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if audits.count(app) >= expected:
            break
        await asyncio.sleep(2)
    return audits.count(app)


async def _main(state_dir: Path) -> int:
    from reag.trust.audit import is_audit
    from shell.kafka_io.topics import ensure_topics_at
    from shell.stack import supervisor

    app = "nutrition"
    held_out = int(_env("REAG_BENCH_TRUST_STACK_ITEMS", "40"))
    rate = float(_env("REAG_BENCH_TRUST_STACK_AUDIT_RATE", "0.2"))
    alpha = float(_env("REAG_BENCH_TRUST_STACK_ALPHA", str(LOCAL_ALPHA)))
    seed = int(_env("REAG_BENCH_SEED", "0"))
    for name, port in PORTS.items():
        os.environ.setdefault(name, port)
    os.environ["REAG_STATE_DIR"] = str(state_dir)
    os.environ["REAG_AUDIT_RATE"] = str(rate)
    settings = supervisor.StackSettings(app_manifest=APP_MANIFEST)
    print(f"state folder {state_dir}; audit rate {rate:.0%}; {held_out} held-out items", flush=True)
    started = time.monotonic()
    state = await asyncio.to_thread(supervisor.up, settings, after_broker=ensure_topics_at)
    os.environ["REAG_LLM_LOCAL_URL"] = state.model_url
    os.environ["REAG_KAFKA__BOOTSTRAP_SERVERS"] = state.bootstrap
    try:
        print(f"calibrating on the labelled set less {held_out} items (α={alpha})", flush=True)
        held = await _calibrate_on_rest(app, held_out, seed, alpha, state.bootstrap)
        live, gold = _live(held, f"{seed}-{int(time.time())}")
        audits = sum(is_audit(c, rate) for c in gold)
        print(f"sending {len(live)} live criteria ({audits} will be audits)", flush=True)
        await _send(live, state.bootstrap)
        reviewer = GoldReviewer(gold)
        idle = float(_env("REAG_BENCH_TRUST_STACK_IDLE_S", "900"))
        labelled = await _review(reviewer, idle)
        print(
            f"scripted reviewer labelled {labelled} criteria (abstentions and audits)", flush=True
        )
        recorded = await _wait_for_audits(app, audits, 120)
        print(f"calibrator recorded {recorded} of {audits} audits", flush=True)
        out = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "shell.cli.main", "trust", "--app", app, "--json"],
            capture_output=True,
            text=True,
            check=False,
            env=os.environ.copy(),
        )
        print("$ reag trust --app nutrition --json", flush=True)
        print(out.stdout or out.stderr, flush=True)
        doc = json.loads(out.stdout) if out.returncode == 0 else []
        print(f"done in {time.monotonic() - started:.0f} s", flush=True)
        return 0 if doc else 1
    finally:
        supervisor.down(settings, echo=lambda _m: None)


def run() -> None:
    state_dir = Path(_env("REAG_BENCH_TRUST_STACK_DIR", tempfile.mkdtemp(prefix="reag-trust-")))
    code = asyncio.run(_main(state_dir.resolve()))
    if code:
        print("the stack run did not produce a trust report", flush=True)


if __name__ == "__main__":
    run()
