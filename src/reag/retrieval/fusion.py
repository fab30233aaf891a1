"""Rank fusion: combine kernels whose scores live on different, corpus-dependent scales.

Why rank-based: BM25 scores grow with the query's length and the corpus's
vocabulary, cosine similarities sit in a narrow band that differs per
embedding model, and ICRALM's mean log-probabilities shift with the model
and the document's length. A weighted sum of such scores (even of z-scores)
carries a weight tuned to one corpus. Reciprocal-rank fusion (Cormack,
Clarke and Buettcher, SIGIR 2009) only reads each kernel's ranks:
``RRF(d) = sum_k 1 / (c + rank_k(d))`` with ``c = 60``, the constant of the
paper, which was not tuned here. A document several kernels put near the top
beats one that a single kernel loves, with no weight to fit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

RRF_CONSTANT = 60
"""Cormack et al.'s c; a larger c flattens the difference between the top ranks."""


def ranks(scores: Sequence[float]) -> list[int]:
    """1-based rank of each score (higher score, better rank); ties keep input order."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    result = [0] * len(scores)
    for rank, i in enumerate(order, start=1):
        result[i] = rank
    return result


def rank_normalise(scores: Sequence[float]) -> list[float]:
    """Scores replaced by ``1 - (rank - 1) / n``: in (0, 1], the same for any monotone rescaling."""
    n = len(scores)
    return [1.0 - (r - 1) / n for r in ranks(scores)]


def reciprocal_rank_fusion(
    score_lists: Sequence[Sequence[float]], *, constant: int = RRF_CONSTANT
) -> list[float]:
    """The RRF score of each document from the kernels' scores over the same documents.

    ``score_lists[k][i]`` is kernel k's score of document i (higher is better;
    any scale). A document a kernel did not score can be given ``-inf`` there:
    it then adds nothing from that kernel.
    """
    if constant < 0:
        raise ValueError(f"the RRF constant must be >= 0, got {constant}")
    if not score_lists:
        raise ValueError("reciprocal rank fusion needs at least one ranking")
    n = len(score_lists[0])
    if any(len(scores) != n for scores in score_lists):
        raise ValueError("every ranking must score the same documents")
    fused = [0.0] * n
    for scores in score_lists:
        if any(math.isnan(s) for s in scores):
            raise ValueError("scores contain NaN")
        for i, rank in enumerate(ranks(scores)):
            if scores[i] != -math.inf:
                fused[i] += 1.0 / (constant + rank)
    return fused
