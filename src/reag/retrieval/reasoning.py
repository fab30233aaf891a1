"""Self-reasoning (REAG 3.2.3): relevance, evidence and application analysis -> I|<R, K, p>.

For each retrieved document one structured call does steps 1 and 2 (the
relevance verdict with its reason, then evidence sentences with why they
apply); a document-at-a-time call keeps every verdict tied to one document
even with a small model, and the calls run concurrently. A final call does
step 3 over the relevant documents and their *verified* evidence. Every
cited sentence is checked against its document (``reag.retrieval.evidence``);
one that is not there is dropped and counted, never passed on.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from pydantic import BaseModel, Field

from reag.llm.base import Message
from reag.llm.client import LLMClient
from reag.retrieval.evidence import locate
from reag.retrieval.prompts import SYSTEM, analysis_prompt, document_prompt
from reag.retrieval.retriever import RankedDocument, Retrieval
from reag.v1 import events_pb2 as pb

log = logging.getLogger(__name__)


# Length caps are part of the JSON schema, so a backend that decodes under the schema's
# grammar (the local model) must close every string in time: a small model otherwise
# fills max_tokens with one string and the JSON never ends. llama.cpp refuses grammars
# past about 1,000 repetitions of one rule, hence no cap above 1,000 characters. The
# caps are also the cost: on the local 1.5B model a document check generated ~215
# tokens at the earlier caps (240/300/200 characters, 3 sentences), and every token is
# decoded on the CPU, once per document of every case.
class CitedSentence(BaseModel):
    sentence: str = Field(
        max_length=300, description="A sentence copied word for word from the document."
    )
    why: str = Field(
        max_length=120, description="In a short clause, how this sentence applies to the request."
    )


class DocumentCheck(BaseModel):
    """Steps 1 and 2 for one document, in the order the model should reason."""

    relevant: bool = Field(description="Whether the document constrains the app's answer.")
    reason: str = Field(
        max_length=160, description="One short sentence: why it is or is not relevant."
    )
    evidence: list[CitedSentence] = Field(
        default_factory=list,
        max_length=3,
        description="Verbatim sentences; empty when not relevant.",
    )


class ApplicationAnalysis(BaseModel):
    analysis: str = Field(
        max_length=700, description="The interpreted intention, 3 to 5 sentences."
    )


@dataclass(frozen=True, slots=True)
class InterpretationOutcome:
    """The interpretation and what producing it cost and caught."""

    interpretation: pb.Interpretation
    n_evidence_cited: int
    n_evidence_fabricated: int
    n_calls: int
    cost_usd: float


class SelfReasoner:
    def __init__(
        self,
        client: LLMClient,
        *,
        max_evidence: int = 2,  # at most 3: the schema allows no more
        concurrency: int = 4,
        evidence_threshold: float = 0.9,
        max_tokens: int = 600,
    ) -> None:
        self.client = client
        self.max_evidence = max_evidence
        self.evidence_threshold = evidence_threshold
        self.max_tokens = max_tokens
        self._semaphore = asyncio.Semaphore(concurrency)

    async def _check(
        self, intention: pb.Intention, ranked: RankedDocument
    ) -> tuple[pb.RetrievedDocument, int, int, int, float]:
        document = ranked.document
        messages = [
            Message("system", SYSTEM),
            Message("user", document_prompt(intention, document, max_evidence=self.max_evidence)),
        ]
        async with self._semaphore:
            result = await self.client.structured(
                messages, DocumentCheck, max_tokens=self.max_tokens
            )
        check = result.value
        out = pb.RetrievedDocument(
            doc_id=document.address,
            kind=document.kind,
            title=document.title,
            score=ranked.score,
            rank=ranked.rank,
            relevant=check.relevant,
            relevance_reason=check.reason.strip(),
            content=document.content,
        )
        cited = check.evidence[: self.max_evidence] if check.relevant else []
        fabricated = 0
        for claim in cited:
            quote = locate(claim.sentence, document.text, threshold=self.evidence_threshold)
            if quote is None:
                fabricated += 1
                continue
            out.evidence.append(
                pb.Evidence(doc_id=document.address, sentence=quote, why=claim.why.strip())
            )
        return out, len(cited), fabricated, result.n_calls, result.cost_usd

    async def interpret(
        self, intention: pb.Intention, retrieval: Retrieval
    ) -> InterpretationOutcome:
        """Checks every selected document, then writes the application analysis."""
        checks = await asyncio.gather(
            *(self._check(intention, ranked) for ranked in retrieval.selected)
        )
        documents = [c[0] for c in checks]
        cited = sum(c[1] for c in checks)
        fabricated = sum(c[2] for c in checks)
        calls = sum(c[3] for c in checks)
        cost = sum(c[4] for c in checks)
        if fabricated:
            log.info(
                "dropped %d of %d cited evidence sentences not found in their documents (case %s)",
                fabricated,
                cited,
                intention.meta.case_id,
            )
        messages = [
            Message("system", SYSTEM),
            Message("user", analysis_prompt(intention, documents)),
        ]
        analysis = await self.client.structured(
            messages, ApplicationAnalysis, max_tokens=self.max_tokens
        )
        interpretation = pb.Interpretation(
            intention=intention,
            documents=documents,
            k=retrieval.k,
            buffer=retrieval.buffer,
            kernel=retrieval.kernel,
            analysis=analysis.value.analysis.strip(),
            n_candidates=retrieval.n_candidates,
        )
        interpretation.meta.CopyFrom(intention.meta)
        return InterpretationOutcome(
            interpretation=interpretation,
            n_evidence_cited=cited,
            n_evidence_fabricated=fabricated,
            n_calls=calls + analysis.n_calls,
            cost_usd=cost + analysis.cost_usd,
        )
