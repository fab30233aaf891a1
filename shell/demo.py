"""``reag demo``: reag's main job end to end on the embedded stack.

1. start the stack (broker, model server, sample app, every service);
2. ingest the example app's corpus;
3. calibrate every judge tier on the app's expert-labelled set and publish
   the thresholds (scores are stored, so a second demo makes no judge call);
4. let simulated users probe the sample app; their traffic enters the pipeline;
5. wait for each case's result in the ledger (or its dead letter), and print
   persona, query, retrieved documents with scores and k, the oracle's
   criteria, and per criterion the tiers, confidences and verdict;
6. print coverage, per-tier rates and the cost of every LLM call made;
7. stop the stack it started.

This module is shell, not core: it drives services over Kafka.
"""

from __future__ import annotations

import asyncio
import os
import time
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reag.apps import AppConfig, load_app
from reag.fit_defaults import DEFAULT_DELTA, LOCAL_ALPHA
from reag.v1 import events_pb2 as pb
from shell.stack import supervisor

Echo = Callable[[str], None]


def local_note(alpha: float) -> str:
    """What the embedded default is, and what its verdicts are worth, before any is shown."""
    from reag.judging.settings import CascadeSettings

    settings = CascadeSettings()
    tiers = " → ".join(
        f"{(settings.model_for(t) or 'REAG_LLM_MODEL').removeprefix('local:')} "
        f"N={settings.annotators_for(t)}"
        for t in range(1, settings.n_tiers + 1)
    )
    return (
        "reag runs on local instruction-tuned models here (no key, no network): the judge\n"
        f"cascade is {tiers}; Qwen2.5-Coder 1.5B writes the oracles, and\n"
        "the sample app under test answers with the 0.5B model. Judges this small are far\n"
        f"from hosted ones, so the demo calibrates at α = {alpha:g}: accepted verdicts disagree\n"
        f"with experts at most {alpha:.0%} of the time (probability ≥ 1−δ), and what no tier can\n"
        "accept at that bound goes to review. Hosted judges meet α = 0.15, e.g.\n"
        "  REAG_TIER_MODELS=gemini:gemini-2.5-flash-lite,openai:gpt-4.1-mini,"
        "gemini:gemini-2.5-flash\n"
        "  REAG_LLM_OPENAI_API_KEY=... REAG_LLM_GEMINI_API_KEY=...   (see docs/llm.md)"
    )


@dataclass
class DemoOptions:
    manifest: Path = Path("examples/nutrition/app.yaml")
    # One case keeps the first run within 15 minutes on 2 cores (a case costs about five
    # minutes of local-model time: ranking, document checks, the oracle, the judge);
    # `--cases N` runs more.
    cases: int = 1
    seed: int = 7
    alpha: float = LOCAL_ALPHA
    delta: float = DEFAULT_DELTA
    timeout_s: float = 3600.0
    keep: bool = False


@dataclass
class CaseWatch:
    """What the demo knows of one case while it flows through the pipeline."""

    traffic: pb.Traffic
    oracle: pb.Oracle | None = None
    result: pb.Result | None = None
    dead_letters: list[pb.DeadLetter] = field(default_factory=list)

    @property
    def done(self) -> bool:
        if self.dead_letters:
            return True
        return self.result is not None and self.result.complete


_LABELS: dict[int, str] = {pb.LABEL_YES: "YES", pb.LABEL_NO: "NO"}
_OUTCOMES: dict[int, str] = {
    pb.OUTCOME_PASS: "PASS",
    pb.OUTCOME_FAIL: "FAIL",
    pb.OUTCOME_ABSTAIN: "ABSTAIN",
}


def _label(value: int) -> str:
    return _LABELS.get(value, "-")


def _outcome(value: int) -> str:
    return _OUTCOMES.get(value, "PENDING")


def _case_of_dead_letter(letter: pb.DeadLetter) -> str | None:
    """The case id inside a dead letter's original bytes, when they still decode."""
    from services.kit.topology import TOPICS

    payload = {spec.name: spec.payload for spec in TOPICS if spec.reag_event}.get(letter.topic)
    if payload is None:  # not a reag event (OTLP spans): no case id inside
        return None
    message_type = getattr(pb, payload)
    try:
        event = message_type.FromString(letter.value)
    except Exception:  # noqa: BLE001 - undecodable bytes are what a dead letter may hold
        return None
    meta = getattr(event, "meta", None)
    return meta.case_id if meta is not None and meta.case_id else None


async def _follow_dead_letters(
    bootstrap: str, watches: dict[str, CaseWatch], stop: asyncio.Event
) -> None:
    from aiokafka import AIOKafkaConsumer

    from services.kit.topology import DLQ

    consumer = AIOKafkaConsumer(DLQ, bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    try:
        while not stop.is_set():
            batches = await consumer.getmany(timeout_ms=1000)
            for records in batches.values():
                for record in records:
                    letter = pb.DeadLetter.FromString(record.value)
                    case_id = _case_of_dead_letter(letter)
                    if case_id in watches:
                        watches[case_id].dead_letters.append(letter)
    finally:
        await consumer.stop()


def _ingest_corpus(config: AppConfig, dsn: str, echo: Echo) -> None:
    from reag.corpus.loader import load_sources
    from reag.corpus.manifest import load_manifest
    from reag.corpus.store import CorpusStore
    from reag.traffic.policy import PolicyStore

    manifest = load_manifest(config.base_dir / "app.yaml")
    documents = load_sources(manifest.corpus_paths(), config.name)
    report = CorpusStore.open(dsn).add(config.name, documents)
    PolicyStore.open(dsn).put(config.name, config.traffic_policy())
    kinds: dict[str, int] = {}
    for document in documents:
        kinds[document.kind] = kinds.get(document.kind, 0) + 1
    summary = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    echo(f"  {report.total} documents ({summary}); {len(report.added)} new")


async def _calibrate(config: AppConfig, options: DemoOptions, echo: Echo) -> list[pb.Threshold]:
    from reag.calibration_run.fitting import FitSpec
    from shell.kafka_io.labels import calibrate_from_labels
    from shell.progress import tier_bars

    if not config.calibration:
        raise supervisor.StackError(f"app {config.name!r} has no calibration set in its manifest")
    with tier_bars(label="scoring the labelled set,") as progress:
        run = await calibrate_from_labels(
            config.resolve(config.calibration),
            FitSpec(alpha=options.alpha, delta=options.delta),
            app=config.name,
            publish=True,
            progress=progress,
            stored_scores=(
                config.resolve(config.calibration_scores) if config.calibration_scores else None
            ),
            caller="demo",
        )
    calibration = run.result
    for report in calibration.snapshots:
        echo(f"  {report.line()}")
    echo(f"  {calibration.stats.line()}")
    echo(f"  {calibration.model_note()}")
    for threshold in calibration.thresholds:
        if threshold.has_threshold:
            echo(
                f"  tier {threshold.tier}: λ̂ = {threshold.threshold:.3f} on "
                f"{threshold.n_calibration} items ({threshold.n_accepted} accepted, risk "
                f"{threshold.risk:.3f} ≤ bound {threshold.risk_upper:.3f} ≤ α={options.alpha})"
            )
        else:
            echo(f"  tier {threshold.tier}: no threshold — {threshold.reason}")
    return calibration.thresholds


def _print_case(index: int, watch: CaseWatch, echo: Echo) -> None:
    traffic = watch.traffic
    echo(f"\n── case {index}: {traffic.meta.case_id}")
    oracle = watch.oracle
    persona = oracle.interpretation.intention.persona if oracle else None
    echo(f"  persona : {persona.category_id if persona else traffic.profile.persona_hint}")
    echo(f"  query   : {' '.join(traffic.query.split())[:300]}")
    if watch.dead_letters:
        for letter in watch.dead_letters:
            echo(f"  DEAD LETTER from {letter.service} ({letter.error_type}): {letter.reason}")
        return
    if oracle is None:
        echo("  (no oracle yet)")
        return
    interpretation = oracle.interpretation
    echo(
        f"  retrieved ({interpretation.kernel}, k={interpretation.k} + buffer "
        f"{interpretation.buffer}, of {interpretation.n_candidates} documents):"
    )
    for document in interpretation.documents:
        mark = "relevant" if document.relevant else "not relevant"
        echo(f"    {document.rank:>2}. {document.doc_id:<28} score {document.score:8.3f}  {mark}")
    echo(f"  objective: {' '.join(oracle.test_objective.split())[:300]}")
    response = " ".join(interpretation.intention.actual_response.split())
    echo(f"  response : {response[:400] + ('…' if len(response) > 400 else '')}")
    result = watch.result
    by_id = {c.criterion.criterion_id: c for c in result.criteria} if result else {}
    echo("  criteria:")
    for criterion in oracle.criteria:
        echo(f"    [{criterion.index}] {' '.join(criterion.text.split())[:200]}")
        echo(f"        from {', '.join(criterion.source_doc_ids) or '(no document cited)'}")
        outcome = by_id.get(criterion.criterion_id)
        if outcome is None:
            continue
        tiers = "  ".join(
            f"t{a.tier} {_label(a.verdict)} c={a.confidence:.3f}"
            + (f"≥{a.threshold:.3f}" if a.accepted else "")
            for a in outcome.history
            if a.tier > 0
        )
        decision = (
            f"ACCEPTED {_label(outcome.label)} at tier {outcome.tier}"
            if outcome.accepted
            else "ABSTAIN → review"
            if outcome.abstained
            else "open"
        )
        echo(f"        {tiers}  ⇒ {decision}")
    if result is not None:
        echo(
            f"  RESULT: {_outcome(result.outcome)}"
            + (f" (open: {len(result.open_criteria)})" if result.open_criteria else "")
        )


@dataclass
class SpendRow:
    """What one (service, tier, model) spent on LLM calls, every call counted."""

    calls: float = 0.0
    prompt: float = 0.0
    cached: float = 0.0
    completion: float = 0.0
    usd: float = 0.0
    seconds: float = 0.0

    @property
    def tokens(self) -> float:
        """Tokens evaluated: prompt tokens not served from the KV cache, plus completions."""
        return self.prompt - self.cached + self.completion

    def add(self, other: SpendRow) -> None:
        for name in ("calls", "prompt", "cached", "completion", "usd", "seconds"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


Spend = dict[tuple[str, str, str], SpendRow]
"""Keyed by (service, tier, model)."""


def _spend_from(samples: Iterable[Any], default_service: str) -> Spend:
    rows: Spend = {}
    for sample in samples:
        if not sample.name.startswith("reag_llm_"):
            continue
        labels = sample.labels
        key = (
            labels.get("service", default_service),
            labels.get("tier", ""),
            labels.get("model", ""),
        )
        row = rows.setdefault(key, SpendRow())
        if sample.name == "reag_llm_calls_total":
            row.calls += sample.value
        elif sample.name == "reag_llm_tokens_total":
            kind = labels.get("type", "")
            if kind in ("prompt", "cached", "completion"):
                setattr(row, kind, getattr(row, kind) + sample.value)
        elif sample.name == "reag_llm_cost_usd_total":
            row.usd += sample.value
        elif sample.name == "reag_llm_call_seconds_sum":
            row.seconds += sample.value
    return rows


def _merge(into: Spend, more: Spend) -> None:
    for key, row in more.items():
        into.setdefault(key, SpendRow()).add(row)


def _scrape_llm_spend(state: supervisor.StackState) -> Spend:
    """What every service process spent, read off its /metrics."""
    from prometheus_client.parser import text_string_to_metric_families

    spend: Spend = {}
    for record in state.processes:
        if record.health_path is None:
            continue
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{record.port}/metrics", timeout=5
            ) as response:
                text = response.read().decode()
        except OSError:
            continue
        samples = (s for f in text_string_to_metric_families(text) for s in f.samples)
        _merge(spend, _spend_from(samples, record.name))
    return spend


def _spend_lines(spend: Spend) -> list[str]:
    """One line per service and tier: calls, tokens, measured seconds, USD charged, and what
    the tokens would cost at the hosted model of the paper's tier of the model's size."""
    from reag.llm.base import Usage
    from reag.llm.prices import PriceTable

    prices = PriceTable.load()
    lines = [
        f"    {'service (tier) model':<58} {'calls':>6} {'tokens':>9} {'seconds':>8} "
        f"{'USD':>9} {'USD-eq':>9}"
    ]
    total, total_eq = SpendRow(), 0.0
    for (service, tier, model), row in sorted(spend.items()):
        if not row.calls:
            continue
        usage = Usage(int(row.prompt), int(row.completion), int(row.cached))
        equivalent = prices.equivalent_cost(model, usage) if model else 0.0
        name = f"{service}{f' ({tier})' if tier else ''} {model.removeprefix('local:')}"
        lines.append(
            f"    {name:<58} {int(row.calls):>6} {int(row.tokens):>9} {row.seconds:>8.0f} "
            f"{row.usd:>9.6f} {equivalent:>9.6f}"
        )
        total.add(row)
        total_eq += equivalent
    lines.append(
        f"    {'total':<58} {int(total.calls):>6} {int(total.tokens):>9} {total.seconds:>8.0f} "
        f"{total.usd:>9.6f} {total_eq:>9.6f}"
    )
    return lines


def _summary(
    watches: dict[str, CaseWatch],
    state: supervisor.StackState,
    demo_spend: Spend,
    echo: Echo,
) -> None:
    from reag.ledger.summary import summarize

    results = [w.result for w in watches.values() if w.result is not None]
    summary = summarize(results)
    dead = sum(1 for w in watches.values() if w.dead_letters)
    echo("\n══ summary")
    echo(
        f"  cases: {len(watches)}  PASS {summary.passed}  FAIL {summary.failed}  "
        f"ABSTAIN {summary.abstained}  dead-lettered {dead}"
    )
    coverage = summary.criteria_accepted / summary.criteria if summary.criteria else 0.0
    echo(
        f"  criteria: {summary.criteria}, accepted with calibrated confidence: "
        f"{summary.criteria_accepted} (coverage {coverage:.0%})"
    )
    for tier in summary.tiers:
        seen = max(tier.requests, 1)
        echo(
            f"  tier {tier.tier}: {tier.requests} judged, accepted {tier.accepted / seen:.0%}, "
            f"escalated {tier.escalated / seen:.0%}, abstained {tier.abstained / seen:.0%}, "
            f"USD {tier.cost_usd:.6f}"
        )
    echo("  LLM calls made by reag, every call counted (tokens evaluated, KV-cache hits excluded).")
    echo("  Local models cost compute: seconds are measured; USD-eq prices the same tokens at the")
    echo("  hosted model of the paper's tier of the model's size (never charged). The sample app")
    echo("  is the app under test, so its own calls are not reag's cost:")
    spend = _scrape_llm_spend(state)
    spend = {k: v for k, v in spend.items() if k[0] != "sample-app"}
    _merge(spend, {(f"demo: {k[0]}", *k[1:]): v for k, v in demo_spend.items()})
    for line in _spend_lines(spend):
        echo(line)


def _demo_spend() -> Spend:
    """What this process itself spent: calibration scoring and the simulated users."""
    from prometheus_client import REGISTRY

    samples = (s for family in REGISTRY.collect() for s in family.samples)
    return _spend_from(samples, "demo")


async def _run_cases(
    config: AppConfig, options: DemoOptions, state: supervisor.StackState, dsn: str, echo: Echo
) -> dict[str, CaseWatch]:
    from reag.ledger.store import LedgerStore
    from shell.kafka_io.probes import elicit_and_publish

    traffic, failed = await elicit_and_publish(
        config,
        count=options.cases,
        seed=options.seed,
        model=None,
        target_url=None,
        bootstrap=state.bootstrap,
        topic="reag.traffic.v1",
        dry_run=False,
        as_json=False,
    )
    if failed:
        echo(f"  {failed} simulated user(s) made no traffic (reasons above)")
    watches = {t.meta.case_id: CaseWatch(t) for t in traffic}
    if not watches:
        return watches
    stop = asyncio.Event()
    follower = asyncio.create_task(_follow_dead_letters(state.bootstrap, watches, stop))
    ledger = LedgerStore.open(dsn)
    deadline = time.monotonic() + options.timeout_s
    reported: dict[str, str] = {}
    try:
        while time.monotonic() < deadline and not all(w.done for w in watches.values()):
            for case_id, watch in watches.items():
                watch.oracle = watch.oracle or ledger.get_oracle(case_id)
                watch.result = ledger.get_result(case_id)
                stage = _stage(watch)
                if reported.get(case_id) != stage:
                    reported[case_id] = stage
                    echo(f"  {case_id}: {stage}")
            await asyncio.sleep(2)
    finally:
        stop.set()
        await follower
        ledger.close()
    if not all(w.done for w in watches.values()):
        echo(f"  gave up waiting after {options.timeout_s:.0f}s; the cases below are partial")
    return watches


def _stage(watch: CaseWatch) -> str:
    if watch.dead_letters:
        return f"dead-lettered by {watch.dead_letters[0].service}"
    if watch.oracle is None:
        return "in the pipeline (elicitor → retriever → oracle)"
    n = len(watch.oracle.criteria)
    decided = 0
    if watch.result is not None:
        decided = sum(1 for c in watch.result.criteria if c.accepted or c.abstained)
    if watch.result is not None and watch.result.complete:
        return f"complete: {_outcome(watch.result.outcome)}"
    return f"oracle with {n} criteria; {decided}/{n} through the judge cascade"


async def run_demo(options: DemoOptions, echo: Echo = print) -> int:
    from reag.llm.settings import LLMSettings

    if LLMSettings().allow_scripted:
        # The stack inherits this environment: any scripted: model would answer for real.
        raise supervisor.StackError(
            "the demo does not run with REAG_LLM_ALLOW_SCRIPTED set: scripted models judge "
            "nothing and belong to load and chaos runs (python -m bench.chaos)"
        )
    settings = supervisor.StackSettings(app_manifest=options.manifest)
    config = load_app(options.manifest)
    if not os.environ.get("REAG_TIER_MODELS"):
        echo(local_note(options.alpha))
    started_here = False
    running = supervisor.status(settings)
    if running and all(p.healthy for p in running):
        state = supervisor.StackState.load(supervisor.state_path(settings))
        echo("\n1. the embedded stack is already running; using it")
    else:
        echo("\n1. starting the embedded stack")
        from shell.kafka_io.topics import ensure_topics_at

        # up() is blocking and runs its own event loop for topic creation: keep it off ours.
        state = await asyncio.to_thread(
            supervisor.up, settings, after_broker=ensure_topics_at, echo=echo
        )
        started_here = True
    # This process's own LLM clients share the stack's model server instead of loading weights.
    os.environ["REAG_LLM_LOCAL_URL"] = state.model_url
    os.environ["REAG_KAFKA__BOOTSTRAP_SERVERS"] = state.bootstrap
    os.environ["REAG_STATE_DIR"] = str(settings.state_dir.resolve())
    dsn = settings.resolved_store_dsn()
    try:
        echo(f"\n2. corpus of {config.name!r}")
        _ingest_corpus(config, dsn, echo)
        echo(
            f"\n3. calibrating the judge tiers on {config.calibration} "
            f"(α={options.alpha}, δ={options.delta}; stored scores are reused)"
        )
        await _calibrate(config, options, echo)
        echo(f"\n4. {options.cases} simulated users probe the sample app; following their cases")
        watches = await _run_cases(config, options, state, dsn, echo)
        echo("\n5. cases")
        for index, watch in enumerate(watches.values(), start=1):
            _print_case(index, watch, echo)
        _summary(watches, state, _demo_spend(), echo)
        incomplete = [w for w in watches.values() if not w.done]
        return 1 if incomplete or not watches else 0
    finally:
        if started_here and not options.keep:
            echo("\nstopping the embedded stack")
            supervisor.down(settings, echo=echo)
        elif started_here:
            echo("\nthe stack is still running (`reag down` stops it)")
