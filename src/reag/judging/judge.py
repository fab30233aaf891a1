"""One tier's judge: N simulated annotators, their label probabilities, confidence (eq. 4).

c(x) = max_y (1/N) Σ_j p_j(y | x): the annotators' label distributions are
averaged first, and the confidence is the largest mean probability; the
verdict is that label (REAG eq. 4; Jung et al., "Trust or Escalate").
Averaging first is what makes disagreement count: two annotators certain of
opposite labels give c = 0.5, not 1, so a threshold calibrated on c can only
accept cases the annotators agree on. Cost is honest: every call made is
charged, which is N calls with token log-probabilities and N × samples in the
sampling fallback (the LLM layer reports both in ``LabelProbs``).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

from reag.judging.errors import JudgeConfigError, LabelProbsError
from reag.judging.exemplars import LABELS, AnnotatorSets, Label
from reag.judging.prompt import (
    DEFAULT_LIMITS,
    PROMPT_VERSION,
    Condition,
    Prompt,
    PromptLimits,
    annotator_prompts,
)
from reag.llm.base import LabelProbs, Usage
from reag.llm.client import LLMClient
from reag.llm.local_models import takes_chat
from reag.v1 import events_pb2 as pb

_PB_LABEL = {"YES": pb.LABEL_YES, "NO": pb.LABEL_NO}


def label_to_pb(label: Label) -> pb.Label.ValueType:
    return _PB_LABEL[label]


def label_from_pb(value: pb.Label.ValueType) -> Label:
    if value == pb.LABEL_YES:
        return "YES"
    if value == pb.LABEL_NO:
        return "NO"
    raise LabelProbsError(f"label {value} is neither YES nor NO")


@dataclass(frozen=True, slots=True)
class JudgeConfig:
    """A tier as configuration: its place in the cascade and its annotators."""

    tier: int
    n_annotators: int = 5
    k_examples: int = 3
    seed: int = 0
    # Samples per annotator where the model gives no log-probabilities;
    # None: the LLM layer's REAG_LLM_SAMPLING_N.
    n_samples: int | None = None

    def __post_init__(self) -> None:
        if self.tier < 1:
            raise JudgeConfigError(f"tier must be ≥ 1, got {self.tier}")
        if (
            self.n_annotators < 1
            or self.k_examples < 0
            or (self.n_samples is not None and self.n_samples < 1)
        ):
            raise JudgeConfigError(
                "need annotators ≥ 1, examples ≥ 0 and samples ≥ 1; got "
                f"N={self.n_annotators}, K={self.k_examples}, samples={self.n_samples}"
            )


@dataclass(frozen=True, slots=True)
class Judgement:
    """What one tier made of one criterion, before any threshold is applied."""

    verdict: Label
    confidence: float
    p_yes: tuple[float, ...]  # per annotator
    method: str
    model: str
    cost_usd: float
    usage: Usage
    latency_s: float
    n_calls: int

    @property
    def mean_p_yes(self) -> float:
        return sum(self.p_yes) / len(self.p_yes)

    @property
    def distributions(self) -> tuple[dict[Label, float], ...]:
        """Each annotator's label distribution, renormalised over YES and NO.

        These are the distributions the confidence was computed from, so
        ``max`` over labels of their mean is ``confidence`` (``reag judge``
        prints them for a case tried by hand).
        """
        return tuple({"YES": p, "NO": 1.0 - p} for p in self.p_yes)


def _p_yes(result: LabelProbs) -> float:
    probs = result.probabilities
    yes, no = probs.get("YES"), probs.get("NO")
    if yes is None or no is None or not (math.isfinite(yes) and math.isfinite(no)):
        raise LabelProbsError(
            f"{result.model} returned label probabilities {probs!r}; expected YES and NO"
        )
    total = yes + no
    if total <= 0.0:
        raise LabelProbsError(f"{result.model} put no probability on YES or NO")
    return yes / total


def decide(p_yes: Sequence[float]) -> tuple[Label, float]:
    """The verdict and confidence of annotators at these P(YES) (eq. 4).

    The mean of the N distributions, then its max: c = max_y (1/N) Σ_j p_j(y).
    The mean of each annotator's own max would hide disagreement (annotators
    at P(YES) = 0.9, 0.2 and 0.3 would give 0.8 while their mean leans NO at
    only 0.53). A tie in mean probability is a NO: a criterion is satisfied
    only when the annotators lean towards it.
    """
    if not p_yes:
        raise LabelProbsError("no annotator answered; a judgement needs at least one")
    mean_yes = sum(p_yes) / len(p_yes)
    mean_no = sum(1.0 - p for p in p_yes) / len(p_yes)
    return ("YES" if mean_yes > mean_no else "NO"), max(mean_yes, mean_no)


def aggregate(results: Sequence[LabelProbs], *, latency_s: float | None = None) -> Judgement:
    """Combine the annotators' label probabilities into one judgement (``decide``)."""
    if not results:
        raise LabelProbsError("no annotator answered; a judgement needs at least one")
    p_yes = tuple(_p_yes(r) for r in results)
    verdict, confidence = decide(p_yes)
    usage = Usage()
    for r in results:
        usage = usage + r.usage
    return Judgement(
        verdict=verdict,
        confidence=confidence,
        p_yes=p_yes,
        method="sampling" if any(r.method == "sampling" for r in results) else "logprobs",
        model=results[0].model,
        cost_usd=sum(r.cost_usd for r in results),
        usage=usage,
        latency_s=latency_s if latency_s is not None else sum(r.latency_s for r in results),
        n_calls=sum(r.n_calls for r in results),
    )


class TierJudge:
    """One tier's judge over one app's annotator example sets.

    ``prompt_version`` names everything that shapes the prompts besides the
    case itself (template, N, K, seed, the example sets): calibration scores
    are stored under it, so a changed prompt is rescored, never mixed up.

    The N prompts go out as one ``label_probs_many`` group. Each starts with
    its annotator's instructions and examples, the same for every criterion
    of the app, so the local model, which keeps one KV-cache slot per
    annotator, evaluates only the case part of each prompt once its slots
    are warm.
    """

    def __init__(
        self,
        client: LLMClient,
        config: JudgeConfig,
        annotators: AnnotatorSets,
        *,
        limits: PromptLimits = DEFAULT_LIMITS,
    ) -> None:
        self.client = client
        self.config = config
        self.annotators = annotators
        self.limits = limits

    @property
    def model(self) -> str:
        return self.client.model

    @property
    def prompt_version(self) -> str:
        c = self.config
        return (
            f"{PROMPT_VERSION}/n{c.n_annotators}k{c.k_examples}s{c.seed}/"
            f"{self.annotators.digest()[:16]}"
        )

    @property
    def chat(self) -> bool:
        """Chat models get chat turns; a local base model continues raw text."""
        return takes_chat(self.model)

    def prompts(self, request: pb.JudgeRequest, *, exclude_item: str | None = None) -> list[Prompt]:
        return annotator_prompts(
            request, self.annotators.without(exclude_item), self.limits, chat=self.chat
        )

    async def judge(
        self, request: pb.JudgeRequest, *, exclude_item: str | None = None
    ) -> Judgement:
        """Ask every annotator; ``exclude_item`` keeps a calibration item out of its examples."""
        prompts = self.prompts(request, exclude_item=exclude_item)
        started = time.perf_counter()
        results = await self.client.label_probs_many(
            prompts, list(LABELS), n_samples=self.config.n_samples
        )
        if len(results) != len(prompts):
            raise LabelProbsError(
                f"{self.model} answered {len(results)} of {len(prompts)} annotator prompts"
            )
        # The annotators said whether the condition holds; a FAIL-type criterion is met
        # exactly when it does not.
        condition = Condition.of(request.criterion.text)
        results = [
            dataclasses.replace(r, probabilities=condition.meets(r.probabilities)) for r in results
        ]
        return aggregate(results, latency_s=time.perf_counter() - started)
