"""Confidence (eq. 4), verdict and honest cost of one tier's judgement."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from reag.judging.errors import LabelProbsError
from reag.judging.exemplars import draw_annotator_sets
from reag.judging.judge import JudgeConfig, TierJudge, aggregate
from reag.llm.base import LabelProbs, Message, Usage
from reag.llm.client import LLMClient
from reag.llm.prices import ModelPrice, PriceTable
from reag.llm.scripted import FakeProvider

from .conftest import client_with, make_pool, make_request


def probs(
    p_yes: float, *, method: str = "logprobs", cost: float = 0.0, calls: int = 1, tokens: int = 10
) -> LabelProbs:
    return LabelProbs(
        probabilities={"YES": p_yes, "NO": 1.0 - p_yes},
        method=method,  # type: ignore[arg-type]
        model="fake:judge",
        usage=Usage(tokens, 1),
        latency_s=0.1,
        cost_usd=cost,
        n_calls=calls,
    )


def test_confidence_is_the_max_of_the_mean_label_distribution() -> None:
    j = aggregate([probs(0.9), probs(0.8), probs(0.3), probs(0.6), probs(0.95)])
    assert j.confidence == pytest.approx((0.9 + 0.8 + 0.3 + 0.6 + 0.95) / 5)  # mean P(YES) 0.71
    assert j.verdict == "YES"
    assert j.p_yes == pytest.approx((0.9, 0.8, 0.3, 0.6, 0.95))


def test_disagreement_lowers_confidence_where_the_mean_of_maxima_would_hide_it() -> None:
    # Each annotator is fairly sure (maxima 0.9, 0.8, 0.7: their mean is 0.8), but not of
    # the same label: the mean distribution is YES 0.4667, NO 0.5333.
    j = aggregate([probs(0.9), probs(0.2), probs(0.3)])
    assert j.confidence == pytest.approx(1.6 / 3)
    assert j.confidence != pytest.approx(sum(max(p, 1 - p) for p in j.p_yes) / 3)
    assert j.verdict == "NO"


def test_distributions_are_what_the_confidence_is_computed_from() -> None:
    j = aggregate([probs(0.9), probs(0.2), probs(0.3)])
    expected = ({"YES": 0.9, "NO": 0.1}, {"YES": 0.2, "NO": 0.8}, {"YES": 0.3, "NO": 0.7})
    assert len(j.distributions) == len(expected)
    for got, want in zip(j.distributions, expected, strict=True):
        assert got == pytest.approx(want)
    mean = {y: sum(d[y] for d in j.distributions) / 3 for y in ("YES", "NO")}
    assert j.confidence == pytest.approx(max(mean.values()), abs=1e-12)
    assert j.verdict == max(mean, key=lambda y: mean[y])


def test_verdict_follows_the_mean_probability_not_the_majority() -> None:
    # Three annotators lean YES weakly, two say NO strongly: mean P(YES) = 0.426.
    j = aggregate([probs(0.6), probs(0.6), probs(0.6), probs(0.02), probs(0.31)])
    assert j.verdict == "NO"
    assert j.mean_p_yes == pytest.approx(0.426)
    assert j.confidence == pytest.approx(0.574)


def test_confident_annotators_who_disagree_give_no_confidence() -> None:
    # Opposite certainties average to an even split: c = 0.5, the least a judgement can have.
    j = aggregate([probs(1.0), probs(0.0)])
    assert j.confidence == pytest.approx(0.5)
    assert j.verdict == "NO"  # a tie is not a YES


def test_one_annotator_is_its_own_distribution() -> None:
    assert aggregate([probs(0.3)]).confidence == pytest.approx(0.7)
    assert aggregate([probs(0.7)]).verdict == "YES"


def test_probabilities_are_renormalised_over_yes_and_no() -> None:
    odd = LabelProbs({"YES": 0.3, "NO": 0.1}, "logprobs", "fake:judge", Usage(), 0.0)
    assert aggregate([odd]).p_yes == pytest.approx((0.75,))
    with pytest.raises(LabelProbsError, match="expected YES and NO"):
        aggregate([LabelProbs({"MAYBE": 1.0}, "logprobs", "fake:judge", Usage(), 0.0)])


def test_cost_and_tokens_sum_over_every_annotator() -> None:
    j = aggregate([probs(0.9, cost=0.001, tokens=100), probs(0.7, cost=0.002, tokens=50)])
    assert j.cost_usd == pytest.approx(0.003)
    assert j.usage.prompt_tokens == 150
    assert j.n_calls == 2
    assert j.method == "logprobs"


@dataclass
class SamplingProvider(FakeProvider):
    """Answers like a model without log-probabilities: n samples, each a billed call."""

    def __post_init__(self) -> None:
        self.samples_seen: list[int] = []

    async def label_probs(
        self, prompt: str | Sequence[Message], labels: Sequence[str], *, n_samples: int = 5
    ) -> LabelProbs:
        self.samples_seen.append(n_samples)
        yes = (n_samples - 1) / n_samples
        return LabelProbs(
            {"YES": yes, "NO": 1 - yes},
            "sampling",
            self.model,
            Usage(200 * n_samples, 3 * n_samples),
            0.01,
            n_samples=n_samples,
            n_calls=n_samples,
        )


async def test_sampling_fallback_charges_n_annotators_times_samples() -> None:
    provider = SamplingProvider(model="fake:sampler")
    price = PriceTable("test", {"fake:*": ModelPrice(input=1.0, cached_input=1.0, output=10.0)})
    client = LLMClient(provider, prices=price)
    judge = TierJudge(
        client,
        JudgeConfig(tier=2, n_annotators=5, k_examples=3, n_samples=7),
        draw_annotator_sets(make_pool(30), 5, 3, seed=0),
    )
    j = await judge.judge(make_request())
    assert provider.samples_seen == [7] * 5
    assert j.n_calls == 5 * 7
    assert j.method == "sampling"
    assert j.usage.prompt_tokens == 5 * 7 * 200
    per_annotator = (7 * 200 * 1.0 + 7 * 3 * 10.0) * 1e-6
    assert j.cost_usd == pytest.approx(5 * per_annotator)
    assert j.confidence == pytest.approx(6 / 7)


async def test_a_judge_asks_each_annotator_once_and_excludes_the_judged_item() -> None:
    seen: list[str] = []

    def script(prompt: object, labels: Sequence[str]) -> dict[str, float]:
        assert isinstance(prompt, list)  # a chat model gets chat turns
        seen.append("\n".join(m.content for m in prompt))
        return {"YES": 0.9, "NO": 0.1}

    sets = draw_annotator_sets(make_pool(30), 5, 3, seed=0)
    judge = TierJudge(client_with(script), JudgeConfig(tier=1), sets)
    victim = sets.sets[0][0]
    j = await judge.judge(make_request(), exclude_item=victim.item_id)
    assert len(seen) == 5
    assert j.verdict == "YES"
    assert j.confidence == pytest.approx(0.9)
    assert all(victim.actual_response not in p for p in seen)
    assert judge.prompt_version.startswith("judge-prompt-v4/n5k3s0/")
