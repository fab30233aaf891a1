"""Writing and validating the oracle, then fanning it out into one judge request per criterion.

Validation is the schema (``OracleDraft``, each criterion a constrained form)
and then the fixed checks of ``reag.oracle.checks`` (citations of the shown
documents, decidability, polarity, scope, repeats, order): at least one
criterion must survive them. The LLM
client already makes one repair attempt on broken JSON; an oracle that is
still invalid is written once more from scratch (a second *generation*,
which the paper's failure analysis suggests is often better than repairing a
bad one), and if that also fails, ``OracleInvalidError`` goes up to the
caller, which dead-letters the interpretation with the model's last output.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from reag import metrics
from reag.ids import criterion_id_for, oracle_id_for
from reag.llm.base import StructuredOutputError, Usage
from reag.llm.client import LLMClient
from reag.oracle.checks import CheckCounts, CheckedCriterion, check_draft, rule_texts
from reag.oracle.grounding import CriteriaSource, judged_criteria
from reag.oracle.prompt import PromptLimits, build_messages, cited_evidence, used_documents
from reag.oracle.schema import OracleDraft
from reag.v1 import events_pb2 as pb

log = logging.getLogger("reag.oracle")


class OracleInvalidError(StructuredOutputError):
    """Every attempt gave an oracle that does not parse or has no criteria.

    A ``StructuredOutputError``, so the services kit dead-letters it as
    ``llm_output_invalid`` with the model's last output attached.
    """


@dataclass(frozen=True, slots=True)
class WrittenOracle:
    draft: OracleDraft
    criteria: list[CheckedCriterion]
    counts: CheckCounts
    model: str
    attempts: int
    llm_calls: int
    usage: Usage
    cost_usd: float


@dataclass
class OracleWriter:
    client: LLMClient
    limits: PromptLimits = field(default_factory=PromptLimits)
    attempts: int = 2
    temperature: float = 0.0
    retry_temperature: float = 0.7
    max_tokens: int = 1400  # up to 7 criteria of five fields each
    criteria: CriteriaSource = "draft"

    async def write(self, interpretation: pb.Interpretation) -> WrittenOracle:
        messages = build_messages(interpretation, self.limits)
        documents = used_documents(interpretation, self.limits)
        shown = [d.doc_id for d in documents]
        rules = rule_texts(documents)
        last: StructuredOutputError | None = None
        calls = 0
        usage = Usage()
        cost = 0.0
        for attempt in range(1, self.attempts + 1):
            # A retry at temperature 0 would repeat the same failure on a deterministic model.
            temperature = self.temperature if attempt == 1 else self.retry_temperature
            try:
                result = await self.client.structured(
                    messages,
                    OracleDraft,
                    temperature=temperature,
                    max_tokens=self.max_tokens,
                )
            except StructuredOutputError as exc:
                last = exc
                calls += 2  # the first try and the client's repair attempt
                continue
            calls += result.n_calls
            usage = usage + result.usage
            cost += result.cost_usd
            query = interpretation.intention.query
            checked = check_draft(result.value, shown, query=query, rules=rules)
            criteria = judged_criteria(self.criteria, checked.criteria, documents, query)
            if not criteria:
                # Counts only: they name checks, never the draft's or the user's text.
                log.warning(
                    "oracle: attempt %d left no criterion after the checks: %s",
                    attempt,
                    checked.counts.as_dict(),
                )
                last = StructuredOutputError(
                    f"no criterion passed the oracle's checks ({checked.counts.as_dict()})",
                    raw=result.raw,
                )
                continue
            return WrittenOracle(
                result.value,
                criteria,
                checked.counts,
                self.client.model,
                attempt,
                calls,
                usage,
                cost,
            )
        assert last is not None
        raise OracleInvalidError(
            f"no valid oracle after {self.attempts} attempts ({calls} LLM calls) with "
            f"{self.client.model}: {last}. A model that follows JSON schemas better "
            "(REAG_ORACLE_MODEL) usually fixes this.",
            raw=last.raw,
        )


def oracle_event(interpretation: pb.Interpretation, written: WrittenOracle) -> pb.Oracle:
    case_id = interpretation.meta.case_id
    oracle = pb.Oracle(
        oracle_id=oracle_id_for(case_id),
        test_objective=written.draft.test_objective,
        expected_results=written.draft.expected_results,
        criteria=[
            pb.Criterion(
                criterion_id=criterion_id_for(case_id, index),
                index=index,
                text=criterion.text,
                source_doc_ids=criterion.sources,
            )
            for index, criterion in enumerate(written.criteria)
        ],
        model=written.model,
    )
    oracle.meta.CopyFrom(interpretation.meta)
    oracle.interpretation.CopyFrom(interpretation)
    metrics.ORACLE_CRITERIA.labels(interpretation.meta.app).observe(len(oracle.criteria))
    return oracle


def judge_requests(oracle: pb.Oracle, limits: PromptLimits | None = None) -> list[pb.JudgeRequest]:
    """One request per criterion, each carrying what a judge (or a reviewer) needs."""
    interpretation = oracle.interpretation
    intention = interpretation.intention
    evidence = cited_evidence(used_documents(interpretation, limits or PromptLimits()))
    requests = []
    for criterion in oracle.criteria:
        request = pb.JudgeRequest(
            oracle_id=oracle.oracle_id,
            n_criteria=len(oracle.criteria),
            query=intention.query,
            actual_response=intention.actual_response,
            evidence=evidence,
            test_objective=oracle.test_objective,
            expected_results=oracle.expected_results,
        )
        request.meta.CopyFrom(oracle.meta)
        request.criterion.CopyFrom(criterion)
        request.persona.CopyFrom(intention.persona)
        requests.append(request)
    return requests
