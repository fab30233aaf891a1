"""Adaptive top-k (REAG 3.2.2, after Taguchi et al.): cut the ranking at its largest score gap.

With scores sorted descending, Gap_i = s_i - s_{i+1} and k = argmax_i Gap_i:
the largest drop separates the documents the intention is about from the
rest. Two choices of ours, both configurable:

* The search is restricted to the head of the ranking, ``i <= max(1,
  ceil(window * n))`` and ``i <= max_k``. Scores of irrelevant documents
  spread out in the tail (a long document can score far below every other),
  so an unrestricted argmax often lands near the bottom and keeps almost the
  whole corpus. The default window is the first half of the ranking.
* Ties go to the smaller k: an ambiguous cut keeps less context, and the
  buffer then adds the next documents back.

The rule reads only the order of the gaps, so it is unchanged when every
score is multiplied by a positive number or shifted: BM25's, cosine's,
ICRALM's and fused scores need no rescaling first. On reciprocal-rank-fused
scores the gaps come from the kernels' agreement (a document every kernel
ranks high stands apart), so the rule keeps working there; on scores that
are probabilities (a reranker's P(relevant)) ``threshold_k`` is the rule
that needs no tuning.

The buffer (default 1) keeps the documents right after the cut, which the
paper adds because the gap can fall one place too early.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class KSelection:
    """``k`` at the largest gap, ``buffer`` actually added (capped by what is left)."""

    k: int
    buffer: int
    gap: float  # size of the chosen gap; 0.0 when there was none to choose

    @property
    def n_selected(self) -> int:
        return self.k + self.buffer


def adaptive_k(
    scores: Sequence[float],
    *,
    buffer: int = 1,
    max_k: int | None = None,
    window: float = 0.5,
    min_k: int = 1,
) -> KSelection:
    """Choose k for ``scores`` (any order; higher is more relevant).

    ``min_k`` > 1 starts the search further down, for corpora where every
    intention needs several documents (a persona, a requirement, a fact).
    """
    if buffer < 0:
        raise ValueError(f"buffer must be >= 0, got {buffer}")
    if not 0 < window <= 1:
        raise ValueError(f"window must be in (0, 1], got {window}")
    if max_k is not None and max_k < 1:
        raise ValueError(f"max_k must be >= 1, got {max_k}")
    if min_k < 1 or (max_k is not None and min_k > max_k):
        raise ValueError(f"min_k must be between 1 and max_k, got {min_k}")
    if any(math.isnan(s) for s in scores):
        raise ValueError("scores contain NaN")
    n = len(scores)
    if n == 0:
        return KSelection(k=0, buffer=0, gap=0.0)
    if n <= min_k:
        return KSelection(k=n, buffer=0, gap=0.0)
    ordered = sorted(scores, reverse=True)
    limit = min(n - 1, max(min_k, math.ceil(window * n)))
    if max_k is not None:
        limit = min(limit, max_k)
    best_k, best_gap = min_k, ordered[min_k - 1] - ordered[min_k]
    for i in range(min_k + 1, limit + 1):
        gap = ordered[i - 1] - ordered[i]
        if gap > best_gap:
            best_k, best_gap = i, gap
    return KSelection(k=best_k, buffer=min(buffer, n - best_k), gap=best_gap)


def fixed_k(n: int, k: int, *, buffer: int = 0) -> KSelection:
    """The fixed top-k baseline, in the same shape as ``adaptive_k``'s answer."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    chosen = min(k, n)
    return KSelection(k=chosen, buffer=min(buffer, n - chosen), gap=0.0)


def threshold_k(
    scores: Sequence[float], threshold: float, *, min_k: int = 1, max_k: int | None = None
) -> KSelection:
    """Every score >= ``threshold``, at least ``min_k`` and at most ``max_k`` of them.

    For scores on a fixed scale (P(relevant) in [0, 1]), where a threshold
    means the same in every corpus.
    """
    if min_k < 1 or (max_k is not None and min_k > max_k):
        raise ValueError(f"min_k must be between 1 and max_k, got {min_k}")
    if any(math.isnan(s) for s in scores):
        raise ValueError("scores contain NaN")
    n = len(scores)
    k = max(min(min_k, n), sum(1 for s in scores if s >= threshold))
    if max_k is not None:
        k = min(k, max_k)
    return KSelection(k=k, buffer=0, gap=0.0)
