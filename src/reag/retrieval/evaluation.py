"""Retrieval quality against hand-labelled relevant documents (binary relevance).

Precision and recall are of the selected set (top k + buffer). nDCG is
nDCG@n of the selected list, n = its length: DCG = sum over ranks r of
rel_r / log2(r + 1), divided by the DCG of an ideal list of the same length
(all relevant first, min(n, |relevant|) of them). It rewards putting the
relevant documents at the top of what was kept; recall says what was missed.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Collection, Sequence
from dataclasses import dataclass


def precision(selected: Sequence[str], relevant: Collection[str]) -> float:
    if not selected:
        return 0.0
    return sum(1 for d in selected if d in relevant) / len(selected)


def recall(selected: Sequence[str], relevant: Collection[str]) -> float:
    if not relevant:
        raise ValueError("recall needs at least one relevant document")
    return sum(1 for d in set(selected) if d in relevant) / len(relevant)


def ndcg(ranked: Sequence[str], relevant: Collection[str]) -> float:
    """Binary nDCG@len(ranked)."""
    if not ranked or not relevant:
        return 0.0
    dcg = sum(1.0 / math.log2(r + 1) for r, d in enumerate(ranked, start=1) if d in relevant)
    ideal_hits = min(len(ranked), len(relevant))
    ideal = sum(1.0 / math.log2(r + 1) for r in range(1, ideal_hits + 1))
    return dcg / ideal


@dataclass(frozen=True, slots=True)
class QualitySummary:
    n: int
    precision: float
    recall: float
    ndcg: float
    mean_selected: float

    @property
    def f1(self) -> float:
        total = self.precision + self.recall
        return 0.0 if total == 0 else 2 * self.precision * self.recall / total


def summarise(runs: Sequence[tuple[Sequence[str], Collection[str]]]) -> QualitySummary:
    """Macro averages over intentions of (selected, relevant) pairs."""
    if not runs:
        raise ValueError("nothing to summarise")
    return QualitySummary(
        n=len(runs),
        precision=statistics.fmean(precision(s, r) for s, r in runs),
        recall=statistics.fmean(recall(s, r) for s, r in runs),
        ndcg=statistics.fmean(ndcg(s, r) for s, r in runs),
        mean_selected=statistics.fmean(len(s) for s, _ in runs),
    )
