"""The run report's view of the ledger's results, and its rendering through Jinja2.

Every text on the page that came from a user, the app or a model (queries,
responses, criteria, evidence, objectives, reasons) is untrusted, so the
template environment autoescapes everything and the page's Content Security
Policy allows no script at all: an injected ``<script>`` is shown, never run.
The counts the page shows are also written as ``data-*`` attributes, so a test
(or a tool) can read them back without scraping prose.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from reag.calibration.scores import ScoreRecord
from reag.calibration.sweep import SweepResult
from reag.ledger.formatting import criterion_status
from reag.ledger.summary import (
    LABEL_NAMES,
    deciding_tier_cost,
    machine_attempts,
    outcome_name,
    pending_cases,
    reviewed_criteria,
    summarize,
)
from reag.v1 import api_pb2
from reag.v1 import events_pb2 as pb

if TYPE_CHECKING:
    from reag.report.charts import Chart

TEMPLATE = "run.html.j2"
OUTCOMES = ("PASS", "FAIL", "ABSTAIN", "PENDING")


@dataclass(frozen=True, slots=True)
class ReportInputs:
    """What a report is made of; only ``results`` is required.

    ``oracles`` (by case id) add the app's response and the retrieved
    documents a criterion's evidence came from; the ledger's store has them,
    its gRPC API does not. ``scores`` (judge scores on expert-labelled items)
    add the calibration curves, ``sweep`` the α sweep computed from them.
    """

    results: Sequence[pb.Result]
    title: str = "reag run report"
    app: str | None = None
    run_id: str | None = None
    oracles: Mapping[str, pb.Oracle] = field(default_factory=dict)
    scores: Sequence[ScoreRecord] = ()
    sweep: SweepResult | None = None
    generated_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class EvidenceView:
    doc_id: str
    kind: str
    title: str
    sentence: str
    why: str


@dataclass(frozen=True, slots=True)
class AttemptView:
    tier: int
    model: str
    verdict: str
    confidence: float
    threshold: float | None
    cost_usd: float
    tokens: int
    accepted: bool
    decision: str


@dataclass(frozen=True, slots=True)
class CriterionView:
    criterion_id: str
    text: str
    sources: list[str]  # the documents the criterion derives from
    label: str
    status: str
    tier: int
    confidence: float
    cost_usd: float
    evidence: list[EvidenceView]
    attempts: list[AttemptView]
    provisional: bool = False  # accepted under a threshold the app has not certified


@dataclass(frozen=True, slots=True)
class CaseView:
    case_id: str
    app: str
    run_id: str
    outcome: str
    query: str
    response: str | None
    persona_category: str
    test_objective: str
    cost_usd: float
    criteria: list[CriterionView]
    provisional: bool = False  # the outcome rests on provisional verdicts


@dataclass(frozen=True, slots=True)
class CostView:
    honest_usd: float
    deciding_usd: float
    per_case_usd: float | None
    llm_attempts: int
    prompt_tokens: int
    completion_tokens: int


def _documents(oracle: pb.Oracle | None) -> dict[str, pb.RetrievedDocument]:
    if oracle is None:
        return {}
    return {d.doc_id: d for d in oracle.interpretation.documents}


def _attempts(criterion: pb.CriterionResult) -> list[AttemptView]:
    attempts = machine_attempts(criterion)
    views = []
    for position, a in enumerate(attempts):
        last = position == len(attempts) - 1
        if a.accepted or (last and criterion.accepted):
            decision = "accepted"
        elif not last:
            decision = "escalated"
        elif criterion.abstained:
            decision = "abstained"
        else:
            decision = "pending"
        views.append(
            AttemptView(
                tier=a.tier,
                model=a.model or "?",
                verdict=LABEL_NAMES.get(a.verdict, "-"),
                confidence=a.confidence,
                threshold=a.threshold if a.has_threshold else None,
                cost_usd=a.cost_usd,
                tokens=a.prompt_tokens + a.completion_tokens,
                accepted=a.accepted,
                decision=decision,
            )
        )
    return views


def _case(result: pb.Result, oracle: pb.Oracle | None) -> CaseView:
    documents = _documents(oracle)
    criteria = []
    for c in result.criteria:
        evidence = [
            EvidenceView(
                doc_id=e.doc_id,
                kind=documents[e.doc_id].kind if e.doc_id in documents else "",
                title=documents[e.doc_id].title if e.doc_id in documents else "",
                sentence=e.sentence,
                why=e.why,
            )
            for e in c.evidence
        ]
        criteria.append(
            CriterionView(
                criterion_id=c.criterion.criterion_id,
                text=c.criterion.text,
                sources=list(c.criterion.source_doc_ids),
                label=LABEL_NAMES.get(c.label, "-"),
                status=criterion_status(c),
                tier=c.tier,
                confidence=c.confidence,
                cost_usd=c.cost_usd,
                evidence=evidence,
                attempts=_attempts(c),
                provisional=c.provisional,
            )
        )
    response = oracle.interpretation.intention.actual_response if oracle is not None else None
    return CaseView(
        case_id=result.meta.case_id,
        app=result.meta.app,
        run_id=result.meta.run_id,
        outcome=outcome_name(result),
        query=result.query,
        response=response,
        persona_category=result.persona_category,
        test_objective=result.test_objective,
        cost_usd=result.total_cost_usd,
        criteria=criteria,
        provisional=result.provisional,
    )


def _cost(results: Sequence[pb.Result], summary: api_pb2.Summary) -> CostView:
    attempts = [a for r in results for c in r.criteria for a in machine_attempts(c)]
    return CostView(
        honest_usd=summary.total_cost_usd,
        deciding_usd=deciding_tier_cost(results),
        per_case_usd=summary.total_cost_usd / summary.cases if summary.cases else None,
        llm_attempts=len(attempts),
        prompt_tokens=sum(a.prompt_tokens for a in attempts),
        completion_tokens=sum(a.completion_tokens for a in attempts),
    )


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("reag.report", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["usd"] = lambda value: f"${value:.6f}"
    env.filters["pct"] = lambda part, whole: f"{part / whole:.1%}" if whole else "n/a"
    return env


def render_run_report(inputs: ReportInputs) -> str:
    """The report as one HTML document (a string; the caller writes it)."""
    results = inputs.results
    summary = summarize(results)
    outcome_counts = {
        "PASS": summary.passed,
        "FAIL": summary.failed,
        "ABSTAIN": summary.abstained,
        "PENDING": pending_cases(summary),
    }
    generated = inputs.generated_at or datetime.now(UTC)
    charts: list[Chart] = []
    if inputs.scores or inputs.sweep is not None:
        # matplotlib is the `plots` extra: needed only when there is something to plot.
        from reag.report.charts import calibration_charts

        charts = calibration_charts(inputs.scores, inputs.sweep)
    return (
        _environment()
        .get_template(TEMPLATE)
        .render(
            title=inputs.title,
            app=inputs.app,
            run_id=inputs.run_id,
            generated_at=generated.strftime("%Y-%m-%d %H:%M:%S UTC"),
            summary=summary,
            outcomes=OUTCOMES,
            outcome_counts=outcome_counts,
            reviewed=reviewed_criteria(results),
            cost=_cost(results, summary),
            cases=[_case(r, inputs.oracles.get(r.meta.case_id)) for r in results],
            has_oracles=bool(inputs.oracles),
            charts=charts,
            sweep=inputs.sweep,
            n_scores=len(inputs.scores),
        )
    )


__all__ = ["ReportInputs", "render_run_report"]
