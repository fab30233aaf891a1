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
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats


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


@dataclass(frozen=True, slots=True)
class Interval:
    """A point estimate and its percentile bootstrap interval."""

    value: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.value:.3f} [{self.low:.2f}, {self.high:.2f}]"


def _f1_of_means(precisions: np.ndarray, recalls: np.ndarray, axis: int = -1) -> np.ndarray:
    p = np.mean(precisions, axis=axis)
    r = np.mean(recalls, axis=axis)
    total = p + r
    return np.where(total > 0, 2 * p * r / np.where(total > 0, total, 1), 0.0)


def _ratio_of_means(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.asarray(np.mean(a, axis=axis) / np.mean(b, axis=axis))


def bootstrap_intervals(
    runs: Sequence[tuple[Sequence[str], Collection[str]]],
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> dict[str, Interval]:
    """Precision, recall, F1 and nDCG of ``runs`` with percentile bootstrap intervals.

    Intentions are resampled with replacement (scipy.stats.bootstrap); F1 is
    the F1 of the resampled mean precision and recall, as in ``summarise``.
    With one intention the interval is the point.
    """
    if not runs:
        raise ValueError("nothing to summarise")
    p = np.array([precision(s, r) for s, r in runs])
    r = np.array([recall(s, r) for s, r in runs])
    g = np.array([ndcg(s, r) for s, r in runs])
    out: dict[str, Interval] = {}
    point_f1 = float(_f1_of_means(p, r))
    if len(runs) < 2:
        for name, values in (("precision", p), ("recall", r), ("ndcg", g)):
            v = float(values.mean())
            out[name] = Interval(v, v, v)
        out["f1"] = Interval(point_f1, point_f1, point_f1)
        return out
    rng = np.random.default_rng(seed)
    for name, values in (("precision", p), ("recall", r), ("ndcg", g)):
        out[name] = _percentile_interval(
            (values,),
            np.mean,
            float(values.mean()),
            confidence=confidence,
            n_resamples=n_resamples,
            rng=rng,
        )
    out["f1"] = _percentile_interval(
        (p, r), _f1_of_means, point_f1, confidence=confidence, n_resamples=n_resamples, rng=rng
    )
    return out


def _percentile_interval(
    samples: tuple[np.ndarray, ...],
    statistic: Callable[..., Any],
    point: float,
    *,
    confidence: float,
    n_resamples: int,
    rng: np.random.Generator,
) -> Interval:
    """The point with scipy's percentile bootstrap interval; several samples are resampled
    together (paired), so a statistic of two per-intention arrays keeps their pairs."""
    result = stats.bootstrap(
        samples,
        statistic,
        paired=len(samples) > 1,
        confidence_level=confidence,
        n_resamples=n_resamples,
        method="percentile",
        random_state=rng,
    )
    ci = result.confidence_interval
    return Interval(point, float(ci.low), float(ci.high))


def paired_ratio(
    values: Sequence[float],
    baseline: Sequence[float],
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Interval:
    """mean(values) / mean(baseline) over the same intentions, with a paired bootstrap interval."""
    a = np.asarray(values, dtype=float)
    b = np.asarray(baseline, dtype=float)
    if a.shape != b.shape or a.size == 0:
        raise ValueError("a paired ratio needs the same, non-empty set of intentions")
    if b.mean() == 0:
        raise ValueError("the baseline's mean is 0: no ratio")
    point = float(a.mean() / b.mean())
    if a.size < 2:
        return Interval(point, point, point)

    rng = np.random.default_rng(seed)
    return _percentile_interval(
        (a, b), _ratio_of_means, point, confidence=confidence, n_resamples=n_resamples, rng=rng
    )
