"""Cases: is reag's case outcome right, on real requests and responses of three apps (issue 24).

Each labelled case (bench/case_sets.py: ``examples/<app>/cases.yaml``) goes through
the pipeline's own core code, without Kafka, stage by stage as the services run it:

1. retrieval: ``reag.retrieval.retriever.Retriever`` over the app's corpus;
2. self-reasoning: ``reag.retrieval.reasoning.SelfReasoner`` (relevance, evidence, analysis);
3. oracle: ``reag.oracle.writer.OracleWriter``, then ``judge_requests``;
4. judge: ``reag.judging.judge.TierJudge`` on every criterion (tier 1 of the embedded
   cascade: one annotator, three pinned examples, as the committed scores were made).

Every stage's output is stored in ``bench/cases_store/<app>.jsonl`` (committed) under a
key made of what shaped it: the previous stage's key, the model and its weights' hash,
and the prompt version (self-reasoning's and the judge's ``PROMPT_VERSION``; the oracle's
system prompt, schema and limits hashed). A rerun reads what is stored and calls no
model; a change reruns only the stages whose key changed, and an interrupted run
resumes at the first missing stage.

It prints per app and per failure kind: the share of cases decided; on decided cases
agreement, balanced agreement (mean of the PASS and FAIL recalls), the false PASS rate
(bad responses passed) and false FAIL rate (good responses failed), each rate with an
exact (Clopper-Pearson) 95 % interval; must-check coverage and citation precision (at
most 2 cited documents per criterion); criteria per case, and duplicate and
undecidable criteria per case by a fixed checker on the oracle's output before any
filter; seconds and model calls per case. Outcomes are shown twice: the judge's raw
leaning (each criterion met when its mean P(met) > 0.5; a case passes when all are
met) and the calibrated outcome. Calibrated needs thresholds: on nutrition they are
fitted on the stored scores of its 233 expert-labelled items (when the judge's model
and prompt version match a committed score file), cross-fitted by case (a case's own
items are left out of its threshold); the other apps have none until issue 20, so only
their raw leaning is reported. ``--slice N`` takes the first N cases of each app,
``--apps`` picks apps, ``--model`` / ``--oracle-model`` / ``--judge-model`` pick models
(default: the local default model), ``--stats-only`` computes from the store alone.

The held-out app (home-energy) is measured, never tuned on: no prompt, method or
default may be chosen while looking at its figures.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from bench.case_sets import CASE_FILES, HELD_OUT, Case, load_case_set
from reag.fit_defaults import DEFAULT_DELTA, LOCAL_ALPHA

if TYPE_CHECKING:
    from reag.corpus.model import Document
    from reag.judging.exemplars import AnnotatorSets
    from reag.llm.client import LLMClient
    from reag.oracle.grounding import CriteriaSource
    from reag.retrieval.retriever import RetrieverConfig
    from reag.v1 import events_pb2 as pb

HERE = Path(__file__).resolve().parent
STORE = HERE / "cases_store"
SCORES = HERE.parent / "examples" / "nutrition" / "scores"
STAGES = ("retrieval", "reasoning", "oracle", "judge")
MAX_CITED = 2
"""Documents a criterion may cite that count towards coverage and precision."""
DUPLICATE_JACCARD = 0.6
"""Content-word overlap from which two criteria of a case count as near-duplicates."""
RAW_THRESHOLD = 0.5
JUDGE_N, JUDGE_K = 1, 3
ALPHA, DELTA = LOCAL_ALPHA, DEFAULT_DELTA
"""Risk level and failure probability of the cross-fitted thresholds: the demo's α, the one
the local judge meets on the example (at the calibrator's 0.1 it accepts nothing)."""

# Criteria the response text cannot decide: the interface, a purchase or payment flow, how
# things look, what the app or user does later, speed. A fixed list, so counts compare.
UNDECIDABLE = re.compile(
    r"\b(user interface|\bui\b|button|screen|click|tap|scroll|colou?r|font|icon|badge colou?r"
    r"|red badge|green|layout|display(?:s|ed)? (?:in|as|on)|purchase|checkout|basket|cart"
    r"|proceed with|allow the user to|log(?:s|ged)? in|notification|within \d+ ?(?:s|ms|seconds)"
    r"|latency|loads?\b|upload|image|photo|camera|database|api\b|server|stored|encrypt"
    r"|later|next time|follow[- ]up|remember)",
    re.IGNORECASE,
)
_STOP_WORDS = """a an the and or of to in on for with is are be it its this that if pass fail
response user application app does not do any as by at from their they them"""
_STOP = frozenset(_STOP_WORDS.split())


# ---------------------------------------------------------------- the store


@dataclass
class Store:
    """Stage outputs of one app, appended as JSON lines: (stage, case, key) -> output."""

    path: Path
    records: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def open(cls, path: Path) -> Store:
        store = cls(path)
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    store.records[(row["stage"], row["case"], row["key"])] = row["output"]
        return store

    def get(self, stage: str, case: str, key: str) -> dict[str, Any] | None:
        return self.records.get((stage, case, key))

    def put(self, stage: str, case: str, key: str, output: dict[str, Any]) -> None:
        self.records[(stage, case, key)] = output
        self.path.parent.mkdir(parents=True, exist_ok=True)
        row = {"stage": stage, "case": case, "key": key, "output": output}
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")


def digest(*parts: object) -> str:
    text = "\x1f".join(json.dumps(p, sort_keys=True, default=str) for p in parts)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def model_identity(model: str) -> str:
    from reag.llm.local_models import weights_sha256

    return f"{model}@{weights_sha256(model)[:16]}"


def oracle_prompt_version() -> str:
    """The oracle has no version constant: its system prompt, schema and limits, hashed."""
    from reag import decidability
    from reag.oracle import checks
    from reag.oracle.prompt import SYSTEM_PROMPT, PromptLimits
    from reag.oracle.schema import OracleDraft

    return "oracle-" + digest(
        SYSTEM_PROMPT,
        OracleDraft.model_json_schema(),
        repr(PromptLimits()),
        [checks.FORBIDDING.pattern, decidability.UNDECIDABLE.pattern, checks.DUPLICATE_JACCARD],
    )


def grounding_version(source: str) -> str:
    """What decides the quoted criteria: the source and the grounding module's rules."""
    from reag import decidability
    from reag.oracle import grounding

    return f"criteria-{source}-" + digest(
        grounding.MAX_GROUNDED,
        grounding.MIN_SENTENCE_WORDS,
        sorted(grounding.FACT_KINDS),
        grounding._SENTENCE_END.pattern,
        grounding._MODAL.pattern,
        decidability.UNDECIDABLE.pattern,
    )


# ---------------------------------------------------------------- running the stages


@dataclass(frozen=True)
class Models:
    reasoning: str
    oracle: str
    judge: str


@dataclass
class Clients:
    """LLM clients made on first use, so a run that only reads the store never makes one."""

    factory: Callable[[str], LLMClient]
    made: dict[str, LLMClient] = field(default_factory=dict)

    def __call__(self, model: str) -> LLMClient:
        if model not in self.made:
            self.made[model] = self.factory(model)
        return self.made[model]

    async def aclose(self) -> None:
        for client in self.made.values():
            await client.aclose()


class RawRecorder:
    """An LLM client that keeps the raw text of every structured answer it passes on.

    The oracle writer returns the validated draft, which has already dropped blank and
    repeated criteria; the fixed checkers count on what the model wrote.
    """

    def __init__(self, client: LLMClient) -> None:
        self._client = client
        self.raw: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def structured(self, *args: Any, **kwargs: Any) -> Any:
        result = await self._client.structured(*args, **kwargs)
        self.raw.append(result.raw)
        return result


def raw_criteria(raw: str) -> list[str] | None:
    """The criteria list of the oracle's raw JSON, before any cleaning; None if unreadable."""
    try:
        data = json.loads(raw)
    except (TypeError, ValueError):
        return None
    criteria = data.get("PassFailCriteria") if isinstance(data, dict) else None
    if not isinstance(criteria, list):
        return None
    from reag.oracle.schema import render_raw

    return [t for t in (render_raw(c) for c in criteria) if t is not None]


def intention_of(case: Case, app: str, documents: Sequence[Document]) -> pb.Intention:
    from reag.retrieval.intention import make_intention

    persona = next(
        (d for d in documents if d.address == f"persona/{case.request.persona_hint}"), None
    )
    query = case.request.query
    if case.request.context:
        query = f"{query}\n[Label: {case.request.context}]"
    intention = make_intention(
        query,
        persona_id=case.request.persona_hint or "",
        persona_name=persona.title if persona else "",
        persona_description=persona.content if persona else "",
        situation=case.request.profile,
        app=app,
        case_id=f"{app}-{case.id}",
    )
    intention.actual_response = case.response
    return intention


@dataclass
class CaseRun:
    """What one case's stages produced (stored or fresh) and what the fresh ones cost."""

    case: Case
    selected: list[str]
    criteria: list[str]
    p_yes: list[float]
    seconds: float
    calls: int
    raw: list[str] = field(default_factory=list)  # the oracle's criteria as the model wrote them
    sources: list[list[str]] = field(default_factory=list)  # each criterion's cited documents


class Runner:
    def __init__(
        self,
        app: str,
        documents: Sequence[Document],
        store: Store,
        *,
        models: Models,
        clients: Clients,
        annotators: AnnotatorSets,
        retriever_config: RetrieverConfig | None = None,
        criteria: CriteriaSource = "draft",
    ) -> None:
        from reag.corpus.model import corpus_version
        from reag.judging.prompt import PROMPT_VERSION as JUDGE_VERSION
        from reag.retrieval.embedding import MODEL_NAME
        from reag.retrieval.prompts import PROMPT_VERSION as REASONING_VERSION
        from reag.retrieval.retriever import RetrieverConfig

        self.app = app
        self.documents = list(documents)
        self.by_address = {d.address: d for d in self.documents}
        self.store = store
        self.models = models
        self.clients = clients
        self.annotators = annotators
        self.config = retriever_config or RetrieverConfig()
        self.criteria = criteria
        self._retriever: Any = None
        self.keys = {
            "retrieval": digest(
                self.config.model_dump(), corpus_version(self.documents), MODEL_NAME
            ),
            "reasoning": digest(model_identity(models.reasoning), REASONING_VERSION),
            "oracle": digest(model_identity(models.oracle), oracle_prompt_version()),
            "judge": digest(
                model_identity(models.judge),
                f"{JUDGE_VERSION}/n{JUDGE_N}k{JUDGE_K}s0/{annotators.digest()[:16]}",
                # The checked draft's criteria keep the key they had before grounding existed.
                *([] if criteria == "draft" else [grounding_version(criteria)]),
            ),
        }

    def key(self, stage: str) -> str:
        """A stage's key chains every earlier stage's: a change upstream reruns what follows."""
        return digest(*(self.keys[s] for s in STAGES[: STAGES.index(stage) + 1]))

    async def _stage(
        self, stage: str, case: Case, intention: pb.Intention, out: dict[str, dict[str, Any]]
    ) -> dict[str, Any]:
        """One stage's output: stored under its key, or made now and stored."""
        key = self.key(stage)
        stored = self.store.get(stage, case.id, key)
        if stored is None:
            started = time.perf_counter()
            stored = await getattr(self, f"_{stage}")(intention, out)
            stored["seconds"] = round(time.perf_counter() - started, 3)
            self.store.put(stage, case.id, key, stored)
        out[stage] = stored
        return stored

    async def retrieve(self, case: Case) -> list[str]:
        """The documents the retrieval stage keeps for ``case`` (no model call)."""
        intention = intention_of(case, self.app, self.documents)
        stored = await self._stage("retrieval", case, intention, {})
        return list(stored["selected"])

    async def run(self, case: Case) -> CaseRun:
        intention = intention_of(case, self.app, self.documents)
        seconds = 0.0
        calls = 0
        out: dict[str, dict[str, Any]] = {}
        for stage in STAGES:
            stored = await self._stage(stage, case, intention, out)
            seconds += float(stored.get("seconds", 0.0))
            calls += int(stored.get("calls", 0))
        return CaseRun(
            case,
            out["retrieval"]["selected"],
            out["judge"].get("criteria") or out["oracle"]["criteria"],
            [float(sum(p) / len(p)) for p in out["judge"]["p_yes"]],
            seconds,
            calls,
            out["oracle"].get("raw_criteria") or out["oracle"]["criteria"],
            out["judge"].get("sources") or out["oracle"].get("sources") or [],
        )

    async def _retrieval(self, intention: pb.Intention, _: dict[str, Any]) -> dict[str, Any]:
        from reag.retrieval.retriever import Retriever

        if self._retriever is None:
            self._retriever = Retriever(self.config)
        retrieval = await self._retriever.retrieve(intention, self.documents)
        return {
            "selected": [r.document.address for r in retrieval.selected],
            "scores": [round(r.score, 6) for r in retrieval.selected],
            "k": retrieval.k,
            "buffer": retrieval.buffer,
            "kernel": retrieval.kernel,
            "n_candidates": retrieval.n_candidates,
            "calls": 0,
        }

    def _retrieval_of(self, stored: dict[str, Any]) -> Any:
        from reag.retrieval.retriever import RankedDocument, Retrieval

        ranking = [
            RankedDocument(self.by_address[a], s, rank)
            for rank, (a, s) in enumerate(zip(stored["selected"], stored["scores"], strict=True), 1)
        ]
        return Retrieval(
            ranking, stored["k"], stored["buffer"], stored["kernel"], stored["n_candidates"]
        )

    async def _reasoning(self, intention: pb.Intention, out: dict[str, Any]) -> dict[str, Any]:
        from google.protobuf.json_format import MessageToDict

        from reag.retrieval.reasoning import SelfReasoner

        reasoner = SelfReasoner(self.clients(self.models.reasoning))
        outcome = await reasoner.interpret(intention, self._retrieval_of(out["retrieval"]))
        return {
            "interpretation": MessageToDict(
                outcome.interpretation, preserving_proto_field_name=True
            ),
            "calls": outcome.n_calls,
        }

    async def _oracle(self, intention: pb.Intention, out: dict[str, Any]) -> dict[str, Any]:
        from google.protobuf.json_format import ParseDict

        from reag.oracle.writer import OracleWriter
        from reag.v1 import events_pb2 as pb

        interpretation = ParseDict(out["reasoning"]["interpretation"], pb.Interpretation())
        recorder = RawRecorder(self.clients(self.models.oracle))
        written = await OracleWriter(cast("LLMClient", recorder)).write(interpretation)
        return {
            "draft": written.draft.model_dump(mode="json", by_alias=True),
            "criteria": [c.text for c in written.criteria],
            "sources": [list(c.sources) for c in written.criteria],
            "checks": written.counts.as_dict(),
            "raw": recorder.raw[-1] if recorder.raw else "",
            "raw_criteria": raw_criteria(recorder.raw[-1]) if recorder.raw else None,
            "calls": written.llm_calls,
        }

    async def _judge(self, intention: pb.Intention, out: dict[str, Any]) -> dict[str, Any]:
        from google.protobuf.json_format import ParseDict

        from reag.judging.judge import JudgeConfig, TierJudge
        from reag.llm.base import Usage
        from reag.oracle.checks import check_draft, rule_texts
        from reag.oracle.grounding import judged_criteria
        from reag.oracle.prompt import PromptLimits, used_documents
        from reag.oracle.schema import OracleDraft
        from reag.oracle.writer import WrittenOracle, judge_requests, oracle_event
        from reag.v1 import events_pb2 as pb

        interpretation = ParseDict(out["reasoning"]["interpretation"], pb.Interpretation())
        draft = OracleDraft.model_validate(out["oracle"]["draft"])
        documents = used_documents(interpretation, PromptLimits())
        shown = [d.doc_id for d in documents]
        query = interpretation.intention.query
        checked = check_draft(draft, shown, query=query, rules=rule_texts(documents))
        criteria = judged_criteria(self.criteria, checked.criteria, documents, query)
        written = WrittenOracle(
            draft, criteria, checked.counts, self.models.oracle, 1, 0, Usage(), 0.0
        )
        judge = TierJudge(
            self.clients(self.models.judge),
            JudgeConfig(tier=1, n_annotators=JUDGE_N, k_examples=JUDGE_K),
            self.annotators,
        )
        p_yes: list[list[float]] = []
        calls = 0
        for request in judge_requests(oracle_event(interpretation, written)):
            judgement = await judge.judge(request)
            p_yes.append([round(p, 6) for p in judgement.p_yes])
            calls += judgement.n_calls
        return {
            "p_yes": p_yes,
            "prompt_version": judge.prompt_version,
            "calls": calls,
            "criteria": [c.text for c in criteria],
            "sources": [list(c.sources) for c in criteria],
        }


# ---------------------------------------------------------------- the fixed checkers


def content_words(text: str) -> frozenset[str]:
    return frozenset(w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP)


def duplicates(criteria: Sequence[str], threshold: float = DUPLICATE_JACCARD) -> int:
    """Criteria whose content words overlap an earlier criterion's by ``threshold`` (Jaccard)."""
    words = [content_words(c) for c in criteria]
    count = 0
    for i, mine in enumerate(words):
        for earlier in words[:i]:
            union = mine | earlier
            if union and len(mine & earlier) / len(union) >= threshold:
                count += 1
                break
    return count


def undecidable(criteria: Sequence[str]) -> int:
    """Criteria about things the response text cannot show (the fixed UNDECIDABLE list)."""
    return sum(bool(UNDECIDABLE.search(c)) for c in criteria)


def citations(criterion: str, addresses: Iterable[str]) -> list[str]:
    """The documents a criterion cites: the corpus ids it names, at most MAX_CITED, in order.

    A criterion that carries its source ids (issue 24's traceability) names them; one that
    does not cites nothing, and its case's coverage shows it.
    """
    found: list[tuple[int, str]] = []
    for address in addresses:
        local = address.split("/", 1)[1]
        match = re.search(rf"(?<![\w-]){re.escape(local)}(?![\w-])", criterion)
        if match:
            found.append((match.start(), address))
    return [a for _, a in sorted(found)][:MAX_CITED]


# ---------------------------------------------------------------- the statistics


def raw_outcome(p_yes: Sequence[float]) -> str:
    """The judge's leaning: PASS when every criterion's mean P(met) exceeds 0.5."""
    return "PASS" if all(p > RAW_THRESHOLD for p in p_yes) else "FAIL"


def calibrated_outcome(p_yes: Sequence[float], threshold: float | None) -> str:
    """FAIL on an accepted NO, PASS when every criterion is an accepted YES, else ABSTAIN."""
    if threshold is None:
        return "ABSTAIN"
    accepted = [max(p, 1 - p) >= threshold for p in p_yes]
    if any(a and p <= RAW_THRESHOLD for a, p in zip(accepted, p_yes, strict=True)):
        return "FAIL"
    return "PASS" if all(accepted) else "ABSTAIN"


@dataclass(frozen=True)
class Rate:
    k: int
    n: int

    def __str__(self) -> str:
        from reag.calibration import clopper_pearson_interval

        if self.n == 0:
            return "   n/a"
        low, high = clopper_pearson_interval(self.k, self.n)
        return f"{self.k / self.n:6.1%} [{low:.0%}, {high:.0%}] ({self.k}/{self.n})"


@dataclass(frozen=True)
class Outcomes:
    """Expected against given outcomes of a set of cases."""

    pairs: tuple[tuple[str, str], ...]  # (expected, outcome), outcome may be ABSTAIN

    @property
    def decided(self) -> Rate:
        return Rate(sum(o != "ABSTAIN" for _, o in self.pairs), len(self.pairs))

    def _on(self, expected: str) -> list[str]:
        return [o for e, o in self.pairs if e == expected and o != "ABSTAIN"]

    @property
    def agreement(self) -> Rate:
        decided = [(e, o) for e, o in self.pairs if o != "ABSTAIN"]
        return Rate(sum(e == o for e, o in decided), len(decided))

    @property
    def false_pass(self) -> Rate:
        bad = self._on("FAIL")
        return Rate(bad.count("PASS"), len(bad))

    @property
    def false_fail(self) -> Rate:
        good = self._on("PASS")
        return Rate(good.count("FAIL"), len(good))

    @property
    def balanced(self) -> float | None:
        recalls = [1 - r.k / r.n for r in (self.false_pass, self.false_fail) if r.n]
        return sum(recalls) / len(recalls) if recalls else None


@dataclass(frozen=True)
class Citing:
    covered: int
    must: int
    precise: int
    cited: int


def citing(run: CaseRun, addresses: Iterable[str]) -> Citing:
    known = list(addresses)
    if run.sources:  # the criteria's own source ids (the oracle stores them since issue 24)
        cited = {a for sources in run.sources for a in sources[:MAX_CITED]}
    else:
        cited = {a for c in run.criteria for a in citations(c, known)}
    must = set(run.case.must_check)
    return Citing(len(cited & must), len(must), len(cited & must), len(cited))


def cross_fitted_thresholds(
    runs: Sequence[CaseRun], judge_model: str, prompt_version: str
) -> dict[str, float | None] | None:
    """Per case, λ̂ fitted on the stored scores of every other case's calibration items.

    None when no committed score file matches the judge (model and prompt version), or
    the cases carry no calibration items (apps without labels).
    """
    from reag.calibration import fit_threshold
    from reag.calibration_run.snapshot import read_snapshot, snapshot_name

    path = SCORES / snapshot_name(judge_model, prompt_version)
    if not path.exists() or not any(r.case.items for r in runs):
        return None
    lines = read_snapshot(path)
    thresholds: dict[str, float | None] = {}
    for run in runs:
        own = set(run.case.items)
        rows = [v for k, v in lines.items() if k not in own and not v.get("example")]
        fit = fit_threshold(
            [r["confidence"] for r in rows],
            [r["verdict"] != r["label"] for r in rows],
            alpha=ALPHA,
            delta=DELTA,
        )
        thresholds[run.case.id] = fit.threshold
    return thresholds


def provisional_threshold(judge_model: str, prompt_version: str) -> float | None:
    """Day one (issue 26): the threshold an app with no labels borrows, fitted on every
    labelled item of the example app (its committed scores, examples left out).

    The bench's judge shows the example app's pinned examples on every app, as a
    borrowing app's judge does (``reag.judging.pinning.lend_examples``), so the fit holds
    for it as a provisional threshold: it promises the pool's risk, not the app's. The
    app measured is never in the pool.
    """
    from reag.calibration import fit_threshold
    from reag.calibration_run.snapshot import read_snapshot, snapshot_name

    path = SCORES / snapshot_name(judge_model, prompt_version)
    if not path.exists():
        return None
    rows = [v for v in read_snapshot(path).values() if not v.get("example")]
    fit = fit_threshold(
        [r["confidence"] for r in rows],
        [r["verdict"] != r["label"] for r in rows],
        alpha=ALPHA,
        delta=DELTA,
    )
    return fit.threshold


def report(
    app: str,
    runs: Sequence[CaseRun],
    addresses: Sequence[str],
    calibrated: dict[str, float | None] | None,
    provisional: float | None = None,
) -> str:
    """The issue's table for one app, overall and per failure kind."""
    lines = [f"{app}{' (held out)' if app in HELD_OUT else ''}: {len(runs)} cases"]
    n = max(1, len(runs))
    cites = [citing(r, addresses) for r in runs]
    must = sum(c.must for c in cites)
    cited = sum(c.cited for c in cites)
    lines.append(
        f"  criteria/case {sum(len(r.criteria) for r in runs) / n:.1f}, "
        f"duplicate/case {sum(duplicates(r.raw or r.criteria) for r in runs) / n:.2f}, "
        f"undecidable/case {sum(undecidable(r.raw or r.criteria) for r in runs) / n:.2f} "
        "(oracle's raw output), "
        f"seconds/case {sum(r.seconds for r in runs) / n:.1f}, "
        f"model calls/case {sum(r.calls for r in runs) / n:.1f}"
    )
    lines.append(
        f"  must-check coverage {Rate(sum(c.covered for c in cites), must)}, "
        f"citation precision {Rate(sum(c.precise for c in cites), cited)} "
        f"(at most {MAX_CITED} per criterion)"
    )
    outcome_sets = {"raw leaning (0.5)": [raw_outcome(r.p_yes) for r in runs]}
    if calibrated is not None:
        outcome_sets["calibrated (cross-fitted)"] = [
            calibrated_outcome(r.p_yes, calibrated.get(r.case.id)) for r in runs
        ]
    elif provisional is not None:
        outcome_sets[f"provisional (λ̂ {provisional:.3f} borrowed from nutrition)"] = [
            calibrated_outcome(r.p_yes, provisional) for r in runs
        ]
    else:
        lines.append(
            "  calibrated: no thresholds (no labels for this app, and no committed scores of "
            "this judge to borrow one from); raw leaning only"
        )
    kinds = sorted({r.case.kind for r in runs if r.case.kind})
    for name, outcomes in outcome_sets.items():
        every = Outcomes(tuple((r.case.expected, o) for r, o in zip(runs, outcomes, strict=True)))
        balanced = every.balanced
        lines.append(
            f"  {name}: decided {every.decided}; agreement {every.agreement}; balanced "
            f"{'n/a' if balanced is None else f'{balanced:.1%}'}; false PASS {every.false_pass}; "
            f"false FAIL {every.false_fail}"
        )
        for kind in kinds:
            of_kind = Outcomes(
                tuple(
                    (r.case.expected, o)
                    for r, o in zip(runs, outcomes, strict=True)
                    if r.case.kind == kind
                )
            )
            kind_cites = [c for r, c in zip(runs, cites, strict=True) if r.case.kind == kind]
            coverage = Rate(sum(c.covered for c in kind_cites), sum(c.must for c in kind_cites))
            lines.append(
                f"    {kind:26} decided {of_kind.decided}; false PASS {of_kind.false_pass}; "
                f"must-check coverage {coverage}"
            )
    return "\n".join(lines)


# ---------------------------------------------------------------- the command


def parse(argv: Sequence[str]) -> argparse.Namespace:
    from reag.llm.settings import DEFAULT_MODEL

    parser = argparse.ArgumentParser(prog="python -m bench cases", description=__doc__)
    parser.add_argument("--apps", nargs="+", default=list(CASE_FILES), choices=list(CASE_FILES))
    parser.add_argument("--slice", type=int, default=None, help="First N cases of each app.")
    parser.add_argument(
        "--cases", nargs="+", default=None, help="Also these case ids, beyond the slice."
    )
    parser.add_argument("--model", default=DEFAULT_MODEL, help="Every stage's model.")
    parser.add_argument("--reasoning-model", default=None)
    parser.add_argument("--oracle-model", default=None)
    parser.add_argument("--judge-model", default=None)
    parser.add_argument("--store", type=Path, default=STORE, help="Folder of the stored outputs.")
    parser.add_argument(
        "--stats-only", action="store_true", help="Only cases whose every stage is stored."
    )
    parser.add_argument(
        "--criteria",
        nargs="+",
        default=["draft"],
        choices=["draft", "rules", "both"],
        help="Where the judged criteria come from (reag.oracle.grounding); several are "
        "printed side by side from the same stored retrieval, reasoning and oracle stages.",
    )
    parser.add_argument(
        "--retrieval-only",
        action="store_true",
        help="Must-check recall of the retrieval stage on every case (no model call).",
    )
    parser.add_argument(
        "--retrieval-k", type=int, default=None, help="With --retrieval-only: a fixed k to try."
    )
    return parser.parse_args(list(argv))


def chosen_cases(cases: Sequence[Case], args: argparse.Namespace) -> list[Case]:
    """The first ``--slice`` cases and the ``--cases`` named, in the set's order; all if neither."""
    named = set(getattr(args, "cases", None) or ())
    if not args.slice and not named:
        return list(cases)
    return [c for i, c in enumerate(cases) if (args.slice and i < args.slice) or c.id in named]


def default_factory(model: str) -> LLMClient:
    """A client for ``model``; local models load in this process (no model server needed)."""
    from reag.llm import Caller, LLMSettings
    from reag.llm.registry import make_client

    return make_client(model, caller=Caller("bench"), settings=LLMSettings(local_url=None))


async def run_app(
    app: str,
    args: argparse.Namespace,
    factory: Callable[[str], LLMClient] = default_factory,
    retriever_config: RetrieverConfig | None = None,
    criteria: CriteriaSource = "draft",
) -> tuple[list[CaseRun], Runner]:
    from bench.scoring import pinned_sets
    from reag.corpus.manifest import load_manifest

    case_set = load_case_set(CASE_FILES[app])
    manifest = load_manifest(CASE_FILES[app].parent / "app.yaml")
    documents = manifest.load_documents()
    _, (annotators,) = pinned_sets([JUDGE_N], JUDGE_K)
    models = Models(
        args.reasoning_model or args.model,
        args.oracle_model or args.model,
        args.judge_model or args.model,
    )
    clients = Clients(factory)
    store = Store.open(args.store / f"{app}.jsonl")
    runner = Runner(
        app,
        documents,
        store,
        models=models,
        clients=clients,
        annotators=annotators,
        retriever_config=retriever_config,
        criteria=criteria,
    )
    cases = chosen_cases(case_set.cases, args)
    runs = []
    try:
        for case in cases:
            if args.stats_only and runner.store.get("judge", case.id, runner.key("judge")) is None:
                continue
            runs.append(await runner.run(case))
    finally:
        await clients.aclose()
    return runs, runner


def main(argv: Sequence[str]) -> None:
    args = parse(argv)
    if args.retrieval_only:
        for app in args.apps:
            print(asyncio.run(retrieval_recall(app, args)), flush=True)
        return
    for app in args.apps:
        for source in args.criteria:
            runs, runner = asyncio.run(run_app(app, args, criteria=source))
            prompt_version = (
                runner.store.get("judge", runs[0].case.id, runner.key("judge")) if runs else None
            )
            version = prompt_version["prompt_version"] if prompt_version else None
            calibrated = (
                cross_fitted_thresholds(runs, runner.models.judge, version) if version else None
            )
            borrowed = (
                provisional_threshold(runner.models.judge, version)
                if version and calibrated is None
                else None
            )
            print(f"[criteria: {source}]", flush=True)
            print(report(app, runs, list(runner.by_address), calibrated, borrowed), flush=True)


async def retrieval_recall(app: str, args: argparse.Namespace) -> str:
    """Must-check recall of the retrieval stage alone, on every case: no model call.

    The oracle can only cite what retrieval kept, so this bounds must-check coverage.
    """
    from reag.corpus.manifest import load_manifest

    case_set = load_case_set(CASE_FILES[app])
    documents = load_manifest(CASE_FILES[app].parent / "app.yaml").load_documents()
    from bench.scoring import pinned_sets
    from reag.retrieval.retriever import RetrieverConfig

    config = None if args.retrieval_k is None else RetrieverConfig(k=args.retrieval_k)
    _, (annotators,) = pinned_sets([JUDGE_N], JUDGE_K)
    models = Models(args.model, args.model, args.model)
    runner = Runner(
        app,
        documents,
        Store.open(args.store / f"{app}.jsonl"),
        models=models,
        clients=Clients(default_factory),
        annotators=annotators,
        retriever_config=config,
    )
    cases = chosen_cases(case_set.cases, args)
    found = must = kept = 0
    by_kind: dict[str, list[int]] = {}
    for case in cases:
        selected = set(await runner.retrieve(case))
        hits = len(selected & set(case.must_check))
        found, must, kept = found + hits, must + len(case.must_check), kept + len(selected)
        tally = by_kind.setdefault(case.kind or "PASS (good response)", [0, 0])
        tally[0] += hits
        tally[1] += len(case.must_check)
    lines = [
        f"{app}{' (held out)' if app in HELD_OUT else ''}: {len(cases)} cases, retrieval "
        f"keeps {kept / max(1, len(cases)):.1f} documents a case; must-check recall "
        f"{Rate(found, must)}"
    ]
    lines += [f"    {kind:26} {Rate(k, n)}" for kind, (k, n) in sorted(by_kind.items())]
    return "\n".join(lines)


def run() -> None:
    main(["--stats-only"])
