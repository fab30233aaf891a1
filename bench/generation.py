"""Generation: which local instruct model writes the oracles and the self-reasoning, at what speed.

The judge tiers are chosen from stored scores (bench.verdicts); the other
model calls of a case write text: the self-reasoning checks each retrieved
document and writes the application analysis, and the oracle writes the
objective, expected results and criteria the judges then judge. For each
model in REAG_BENCH_GEN_MODELS (default the 0.5B and 1.5B Qwen coders) and
the first REAG_BENCH_GEN_CASES seed queries of the example app (default 3),
this runs the production ``SelfReasoner`` and ``OracleWriter`` on the same
BM25 top-3 documents (no model in the ranking, so only the writer differs)
and prints, per model: seconds for each step, whether the oracle was valid on
the first generation, how many criteria it kept, how many cited evidence
sentences were found verbatim in their documents, and the criteria
themselves, so a person can read them side by side. The texts also go to
REAG_BENCH_OUT (default bench/out) as generation.md.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE.parent / "examples" / "nutrition" / "app.yaml"
OUT = HERE / "out"
MODELS = ("local:qwen2.5-coder-0.5b-instruct", "local:qwen2.5-coder-1.5b-instruct")


@dataclass
class CaseText:
    query: str
    reasoning_s: float = 0.0
    oracle_s: float = 0.0
    evidence_cited: int = 0
    evidence_dropped: int = 0
    relevant: int = 0
    attempts: int = 0
    objective: str = ""
    criteria: list[str] = field(default_factory=list)
    error: str = ""


async def run_model(model: str, cases: int) -> list[CaseText]:
    from reag.apps import load_app
    from reag.corpus import load_manifest, load_sources
    from reag.elicitation.personas import categories_from_documents
    from reag.llm import Caller, LLMSettings
    from reag.llm.base import StructuredOutputError
    from reag.llm.registry import make_client
    from reag.oracle.writer import OracleWriter
    from reag.retrieval import Retriever, RetrieverConfig, make_intention
    from reag.retrieval.reasoning import SelfReasoner

    config = load_app(MANIFEST)
    documents = load_sources(load_manifest(MANIFEST).corpus_paths(), config.name)
    personas = {c.id: c for c in categories_from_documents(documents)}
    retriever = Retriever(RetrieverConfig(kernel="bm25", selection="fixed", k=3))
    client = make_client(model, caller=Caller("bench"), settings=LLMSettings(local_url=None))
    reasoner, writer = SelfReasoner(client), OracleWriter(client)
    texts: list[CaseText] = []
    for index, seed in enumerate(config.load_seed_queries()[:cases]):
        persona = personas.get(seed.persona_hint) or next(iter(personas.values()))
        intention = make_intention(
            seed.full_text(),
            persona_id=persona.id,
            persona_name=persona.name,
            persona_description=persona.description,
            app=config.name,
            case_id=f"gen-{index}",
        )
        text = CaseText(query=seed.text)
        try:
            started = time.perf_counter()
            retrieval = await retriever.retrieve(intention, documents)
            outcome = await reasoner.interpret(intention, retrieval)
            text.reasoning_s = time.perf_counter() - started
            text.evidence_cited = outcome.n_evidence_cited
            text.evidence_dropped = outcome.n_evidence_fabricated
            text.relevant = sum(d.relevant for d in outcome.interpretation.documents)
            started = time.perf_counter()
            written = await writer.write(outcome.interpretation)
            text.oracle_s = time.perf_counter() - started
            text.attempts = written.attempts
            text.objective = written.draft.test_objective
            text.criteria = [c.text for c in written.criteria]
        except StructuredOutputError as exc:
            text.error = f"{type(exc).__name__}: {str(exc)[:200]}"
        texts.append(text)
        print(
            f"  {model.removeprefix('local:')} case {index + 1}: "
            f"reasoning {text.reasoning_s:.0f} s, "
            f"oracle {text.oracle_s:.0f} s, {len(text.criteria)} criteria"
            + (f", ERROR {text.error}" if text.error else ""),
            flush=True,
        )
    await client.aclose()
    return texts


def report(results: dict[str, list[CaseText]]) -> str:
    lines = ["# Generation on the example's seed queries (BM25 top 3, same documents)", ""]
    lines += [
        "| model | cases | valid 1st try | criteria / case | evidence found / cited "
        "| reasoning s / case | oracle s / case |",
        "|---|---|---|---|---|---|---|",
    ]
    for model, texts in results.items():
        n = max(len(texts), 1)
        valid = sum(1 for t in texts if not t.error and t.attempts == 1)
        cited = sum(t.evidence_cited for t in texts)
        kept = cited - sum(t.evidence_dropped for t in texts)
        lines.append(
            f"| {model.removeprefix('local:')} | {len(texts)} | {valid} "
            f"| {sum(len(t.criteria) for t in texts) / n:.1f} | {kept} / {cited} "
            f"| {sum(t.reasoning_s for t in texts) / n:.0f} "
            f"| {sum(t.oracle_s for t in texts) / n:.0f} |"
        )
    for model, texts in results.items():
        lines += ["", f"## {model}"]
        for t in texts:
            note = f"; {t.error}" if t.error else ""
            lines += ["", f"**{t.query}** (attempts {t.attempts}{note})"]
            lines += [f"- objective: {' '.join(t.objective.split())}"]
            lines += [f"- criterion: {' '.join(c.split())}" for c in t.criteria]
    return "\n".join(lines) + "\n"


def run() -> None:
    models = [m for m in os.environ.get("REAG_BENCH_GEN_MODELS", ",".join(MODELS)).split(",") if m]
    cases = int(os.environ.get("REAG_BENCH_GEN_CASES", "3"))
    results = {model: asyncio.run(run_model(model, cases)) for model in models}
    text = report(results)
    print(text)
    out = Path(os.environ.get("REAG_BENCH_OUT", OUT))
    out.mkdir(parents=True, exist_ok=True)
    (out / "generation.md").write_text(text, encoding="utf-8")
