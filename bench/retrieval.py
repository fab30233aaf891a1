"""Benchmark: which retriever finds the documents an expert would need, and at what cost.

On the example app's hand-labelled intentions (examples/nutrition/
retrieval_bench.yaml, each listing its relevant corpus addresses), prints
precision, recall, F1 and nDCG of the selected documents for ICRALM with
adaptive k, embedding cosine with k=5, BM25 with k=5 and with adaptive k,
and the combinations, side by side, with the number of intentions and the
cost of each method.

Cost. ICRALM over the whole corpus scores every (intention, document) pair
with the local model (about a second each on a shared 2-core machine), so
it runs on a spread subset of the intentions (every third by default); the
methods that pre-filter with the embedding need ICRALM only for their top
N documents and run on every intention. Two tables come out of one run:
every method on the subset, and every method that can afford it on all
intentions. The needed pairs are scored first, document by document (the
model keeps the document in its KV cache across intentions), and stored
with the seconds they took in an SQLite cache under
``<state_dir>/cache/retrieval/``, so a rerun makes no model call. Each
method then runs through the real ``Retriever`` on the cached scores; per
method the table gives the ICRALM scorings it needs per intention, the
model seconds those took when computed, and its own wall time in this run.
A cold run (2,265 scorings) took 36 minutes on a shared 2-core machine; a
rerun from the cache takes under a minute (docs/retrieval.md).

Knobs (environment): ``REAG_BENCH_LIMIT`` (first N intentions),
``REAG_BENCH_FULL_EVERY`` (full-corpus ICRALM on every Nth intention, default
3; 1 = all), ``REAG_BENCH_PREFILTER`` (documents the embedding keeps for
ICRALM, default 15), ``REAG_BENCH_MODEL`` (default local:gemma-3-270m),
``REAG_BENCH_OUT`` (a folder for the Markdown tables and per-intention JSON).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field

from reag.corpus import Document, load_manifest, load_sources
from reag.llm.client import LLMClient
from reag.retrieval import (
    Embedder,
    EmbeddingKernel,
    IcralmKernel,
    Retriever,
    RetrieverConfig,
    ScoreCache,
    make_intention,
)
from reag.retrieval.evaluation import QualitySummary, summarise
from reag.settings import ReagSettings
from reag.v1 import events_pb2 as pb

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "examples" / "nutrition" / "app.yaml"
BENCH_FILE = ROOT / "examples" / "nutrition" / "retrieval_bench.yaml"


class BenchIntention(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str
    query: str
    persona_category: str = ""
    situation: str = ""
    relevant: list[str] = Field(min_length=1)


class BenchFile(BaseModel):
    model_config = ConfigDict(extra="ignore")

    intentions: list[BenchIntention] = Field(min_length=1)


@dataclass(frozen=True, slots=True)
class Method:
    name: str
    config: RetrieverConfig

    @property
    def full_icralm(self) -> bool:
        """Scores every document with ICRALM (affordable only on the subset)."""
        return self.config.kernel == "icralm"


@dataclass(frozen=True, slots=True)
class MethodResult:
    method: Method
    quality: QualitySummary
    tuning: QualitySummary  # b-002, b-004, ... (every second intention): where choices were made
    holdout: QualitySummary  # b-001, b-003, ...: not looked at while choosing
    icralm_scorings: float  # per intention
    icralm_model_s: float  # per intention, as measured when the scores were computed
    wall_s: float  # this run, whole method
    per_intention: list[dict[str, object]]


def methods(prefilter_n: int) -> list[Method]:
    """The paper's and the brief's methods, then the combinations and selection rules we tried.

    Adaptive k follows the paper (k from 1, buffer 1) unless the name says
    otherwise. "min k 3" rows search the gap from the third document on.
    """
    n = prefilter_n
    paper = {"min_k": 1, "buffer": 1}
    return [
        Method("ICRALM + adaptive k", RetrieverConfig(kernel="icralm", **paper)),
        Method("ICRALM, k=5", RetrieverConfig(kernel="icralm", selection="fixed")),
        Method("Embedding cosine, k=5", RetrieverConfig(kernel="embedding", selection="fixed")),
        Method("Embedding cosine + adaptive k", RetrieverConfig(kernel="embedding", **paper)),
        Method("BM25, k=5", RetrieverConfig(kernel="bm25", selection="fixed")),
        Method("BM25 + adaptive k", RetrieverConfig(kernel="bm25", **paper)),
        Method(
            f"Embedding top {n} -> ICRALM + adaptive k",
            RetrieverConfig(kernel="embedding+icralm", prefilter_n=n, **paper),
        ),
        Method(
            f"Hybrid (top {n}) + adaptive k",
            RetrieverConfig(kernel="hybrid", prefilter_n=n, **paper),
        ),
        Method(
            f"Hybrid (top {n}), k=5",
            RetrieverConfig(kernel="hybrid", prefilter_n=n, selection="fixed"),
        ),
        Method(
            "Embedding cosine + adaptive k, min k 3, no buffer",
            RetrieverConfig(kernel="embedding", min_k=3, buffer=0),
        ),
        Method(
            f"Hybrid (top {n}) + adaptive k, min k 3, buffer 1 [default]",
            RetrieverConfig(kernel="hybrid", prefilter_n=n, min_k=3, buffer=1),
        ),
        Method(
            f"Hybrid (top {n}) + adaptive k, min k 3, no buffer [best]",
            RetrieverConfig(kernel="hybrid", prefilter_n=n, min_k=3, buffer=0),
        ),
    ]


def load_bench(
    limit: int | None,
) -> tuple[list[Document], list[BenchIntention], list[pb.Intention]]:
    manifest = load_manifest(MANIFEST)
    documents = load_sources(manifest.corpus_paths(), manifest.name)
    bench = BenchFile.model_validate(yaml.safe_load(BENCH_FILE.read_text(encoding="utf-8")))
    items = bench.intentions[:limit] if limit else bench.intentions
    addresses = {d.address for d in documents}
    personas = {d.local_id: d for d in documents if d.kind == "persona"}
    intentions: list[pb.Intention] = []
    for item in items:
        unknown = [a for a in item.relevant if a not in addresses]
        if unknown:
            raise SystemExit(
                f"{BENCH_FILE}: intention {item.id} labels unknown documents {unknown}"
            )
        persona = personas.get(item.persona_category)
        if item.persona_category and persona is None:
            raise SystemExit(
                f"{BENCH_FILE}: intention {item.id} names unknown persona {item.persona_category!r}"
            )
        intentions.append(
            make_intention(
                item.query,
                persona_id=item.persona_category,
                persona_name=persona.title if persona else "",
                situation=item.situation,
                app=manifest.name,
                case_id=item.id,
            )
        )
    return documents, items, intentions


async def warm_icralm(
    kernel: IcralmKernel,
    embedding: EmbeddingKernel,
    intentions: Sequence[pb.Intention],
    documents: Sequence[Document],
    *,
    full: set[int],
    prefilter_n: int,
) -> float:
    """Scores (and caches) every pair a method will ask for; returns the wall seconds.

    Intentions in ``full`` need every document, the others their embedding
    top ``prefilter_n``. Pairs are visited document by document.
    """
    started = time.perf_counter()
    wanted: dict[int, list[int]] = {}
    for i, intention in enumerate(intentions):
        if i in full:
            docs = list(range(len(documents)))
        else:
            cosine = await embedding.score(intention, documents)
            docs = sorted(range(len(documents)), key=lambda j: -cosine[j])[:prefilter_n]
        for j in docs:
            wanted.setdefault(j, []).append(i)
    pairs = [(intentions[i], documents[j]) for j in sorted(wanted) for i in wanted[j]]
    step = 200
    for start in range(0, len(pairs), step):
        await kernel.score_pairs(pairs[start : start + step])
        print(
            f"  ICRALM: {min(start + step, len(pairs))}/{len(pairs)} pairs "
            f"({kernel.stats.calls} model calls, {kernel.stats.cache_hits} cached, "
            f"{time.perf_counter() - started:.0f} s)",
            flush=True,
        )
    return time.perf_counter() - started


async def run_method(
    method: Method,
    positions: Sequence[int],
    items: Sequence[BenchIntention],
    intentions: Sequence[pb.Intention],
    documents: Sequence[Document],
    *,
    client: LLMClient,
    embedder: Embedder,
    cache: ScoreCache,
    embedding_dir: Path,
) -> MethodResult:
    retriever = Retriever(
        method.config,
        client=client,
        embedder=embedder,
        score_cache=cache,
        embedding_cache_dir=embedding_dir,
    )
    runs: list[tuple[list[str], set[str]]] = []
    detail: list[dict[str, object]] = []
    started = time.perf_counter()
    for item, intention in zip(items, intentions, strict=True):
        retrieval = await retriever.retrieve(intention, documents)
        selected = [r.document.address for r in retrieval.selected]
        runs.append((selected, set(item.relevant)))
        detail.append(
            {
                "id": item.id,
                "k": retrieval.k,
                "buffer": retrieval.buffer,
                "selected": selected,
                "relevant": item.relevant,
                "top10": [(r.document.address, round(r.score, 4)) for r in retrieval.ranking[:10]],
            }
        )
    wall = time.perf_counter() - started
    stats = retriever.icralm.stats if retriever.icralm is not None else None
    n = len(items)
    scorings = (stats.calls + stats.cache_hits) / n if stats else 0.0
    model_s = (stats.latency_s + stats.cached_latency_s) / n if stats else 0.0
    return MethodResult(
        method,
        summarise(runs),
        summarise([run for run, i in zip(runs, positions, strict=True) if i % 2 == 1]),
        summarise([run for run, i in zip(runs, positions, strict=True) if i % 2 == 0]),
        scorings,
        model_s,
        wall,
        detail,
    )


def table(results: Sequence[MethodResult]) -> str:
    header = (
        "| Method | Intentions | Precision | Recall | F1 | F1 tuning / holdout | nDCG | "
        "Docs kept | ICRALM scorings / intention | ICRALM model s / intention | "
        "Wall s (this run) |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    rows = [
        f"| {r.method.name} | {r.quality.n} | {r.quality.precision:.3f} | "
        f"{r.quality.recall:.3f} | {r.quality.f1:.3f} | "
        f"{r.tuning.f1:.3f} / {r.holdout.f1:.3f} | {r.quality.ndcg:.3f} | "
        f"{r.quality.mean_selected:.1f} | {r.icralm_scorings:.0f} | {r.icralm_model_s:.1f} | "
        f"{r.wall_s:.1f} |"
        for r in results
    ]
    return "\n".join([header, *rows])


async def _run() -> None:
    from reag.llm.registry import make_client

    limit = int(os.environ["REAG_BENCH_LIMIT"]) if os.environ.get("REAG_BENCH_LIMIT") else None
    full_every = int(os.environ.get("REAG_BENCH_FULL_EVERY", "3"))
    prefilter_n = int(os.environ.get("REAG_BENCH_PREFILTER", "15"))
    model = os.environ.get("REAG_BENCH_MODEL", "local:gemma-3-270m")
    out_dir = Path(os.environ["REAG_BENCH_OUT"]) if os.environ.get("REAG_BENCH_OUT") else None
    cache_dir = ReagSettings().state_dir / "cache" / "retrieval"

    run_started = time.perf_counter()
    documents, items, intentions = load_bench(limit)
    full = set(range(0, len(items), full_every))
    relevant_sizes = [len(i.relevant) for i in items]
    print(
        f"Retrieval benchmark: {len(items)} intentions ({len(full)} with full-corpus ICRALM), "
        f"{len(documents)} documents, {statistics.fmean(relevant_sizes):.1f} relevant per "
        f"intention (min {min(relevant_sizes)}, max {max(relevant_sizes)}); ICRALM model {model}",
        flush=True,
    )
    client = make_client(model)
    cache = ScoreCache(cache_dir / "icralm-scores.sqlite")
    embedder = Embedder()
    embedding = EmbeddingKernel(embedder, cache_dir=cache_dir / "embeddings")
    warm = IcralmKernel(client, cache=cache)
    warm_s = await warm_icralm(
        warm, embedding, intentions, documents, full=full, prefilter_n=prefilter_n
    )

    subset = sorted(full)
    everyone = list(range(len(items)))
    runs = [(f"Every method, on the {len(subset)} intentions with full-corpus ICRALM", subset)]
    if subset != everyone:
        runs.append((f"Methods affordable on all {len(items)} intentions", everyone))
    tables: list[tuple[str, list[MethodResult]]] = []
    for title, indices in runs:
        results = []
        for method in methods(prefilter_n):
            if method.full_icralm and indices != subset:
                continue
            result = await run_method(
                method,
                indices,
                [items[i] for i in indices],
                [intentions[i] for i in indices],
                documents,
                client=client,
                embedder=embedder,
                cache=cache,
                embedding_dir=cache_dir / "embeddings",
            )
            results.append(result)
        tables.append((title, results))
    total_s = time.perf_counter() - run_started
    fresh = warm.stats.calls
    per_call = warm.stats.latency_s / fresh if fresh else 0.0
    lines: list[str] = []
    for title, results in tables:
        best = max(results, key=lambda r: (r.quality.f1, r.quality.ndcg))
        lines += [f"### {title}", "", table(results), "", f"Best F1: {best.method.name}.", ""]
    lines.append(
        f"Corpus: {len(documents)} documents. ICRALM warm-up: {fresh} model calls in this run "
        f"({per_call:.2f} s each on average), {warm.stats.cache_hits} scores from the cache, "
        f"{warm_s:.0f} s. Whole run: {total_s:.0f} s."
    )
    report = "\n".join(lines)
    print()
    print(report)
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "retrieval.md").write_text(report + "\n", encoding="utf-8")
        (out_dir / "retrieval.json").write_text(
            json.dumps(
                {t: {r.method.name: r.per_intention for r in rs} for t, rs in tables},
                indent=1,
                ensure_ascii=False,
            ),
            encoding="utf-8",
        )
    cache.close()


def run() -> None:
    """Entry point of ``python -m bench`` (and of ``python -m bench.retrieval``)."""
    asyncio.run(_run())


if __name__ == "__main__":
    run()
