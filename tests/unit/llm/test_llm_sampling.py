"""The sampling fallback: empirical label frequencies at T=0.7, every sample billed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from reag.llm.accounting import CostLedger
from reag.llm.base import LabelParseError, Message, Usage
from reag.llm.client import LLMClient
from reag.llm.prices import PriceTable
from reag.llm.sampling import SAMPLING_TEMPERATURE, label_probs_by_sampling, match_label
from reag.llm.scripted import FakeProvider
from reag.llm.settings import LLMSettings


def scripted(replies: list[str]) -> Any:
    queue = list(replies)

    def script(_messages: Sequence[Message], _options: dict[str, Any]) -> str:
        return queue.pop(0)

    return script


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("YES", "YES"),
        ("  no, because the route is too long", "NO"),
        ("**Yes**", "YES"),
        ('"NO"', "NO"),
        ("NOTE: unclear", None),
        ("Maybe", None),
        ("", None),
    ],
)
def test_match_label(reply: str, expected: str | None) -> None:
    assert match_label(reply, ["YES", "NO"]) == expected


def test_match_label_prefers_the_longest_label() -> None:
    assert match_label("NOT_APPLICABLE here", ["NO", "NOT_APPLICABLE"]) == "NOT_APPLICABLE"


async def test_frequencies_are_counts_over_samples_that_named_a_label() -> None:
    provider = FakeProvider(chat_script=scripted(["YES", "yes.", "NO", "YES", "I cannot say"]))

    result = await label_probs_by_sampling(provider.chat, provider.model, "Q?", ["YES", "NO"], 5)

    assert result.method == "sampling"
    assert result.probabilities == {"YES": 0.75, "NO": 0.25}
    assert result.n_samples == 5
    assert result.n_calls == 5
    assert all(c.options["temperature"] == SAMPLING_TEMPERATURE for c in provider.calls)
    assert provider.calls[0].payload == [Message("user", "Q?")]


async def test_no_sample_naming_a_label_raises_with_the_samples() -> None:
    provider = FakeProvider(chat_script=scripted(["hmm", "well"]))
    with pytest.raises(LabelParseError) as info:
        await label_probs_by_sampling(provider.chat, provider.model, "Q?", ["YES", "NO"], 2)
    assert info.value.samples == ["hmm", "well"]


async def test_a_failed_logprob_attempt_is_charged_with_the_samples() -> None:
    provider = FakeProvider(chat_script=scripted(["YES"] * 3))
    result = await label_probs_by_sampling(
        provider.chat,
        provider.model,
        "Q?",
        ["YES", "NO"],
        3,
        prior_usage=Usage(40, 1),
        prior_calls=1,
    )
    assert result.n_calls == 4
    assert result.usage == Usage(40 + 3 * 1, 1 + 3 * 1)


class SamplingOnlyProvider(FakeProvider):
    """A black-box model: label probabilities only by sampling its chat."""

    async def label_probs(self, prompt: Any, labels: Sequence[str], *, n_samples: int = 5) -> Any:
        return await label_probs_by_sampling(self.chat, self.model, prompt, labels, n_samples)


async def test_client_prices_every_sample_of_the_fallback(
    llm_settings: LLMSettings, ledger: CostLedger
) -> None:
    provider = SamplingOnlyProvider(
        model="gemini:gemini-2.5-flash-lite",
        chat_script=scripted(["YES", "NO", "YES", "YES", "YES", "NO", "NO"]),
    )
    settings = llm_settings.model_copy(update={"sampling_n": 7})
    client = LLMClient(provider, settings=settings, ledger=ledger)
    price = PriceTable.load().lookup(provider.model)

    result = await client.label_probs("word " * 100, ["YES", "NO"])

    assert result.probabilities == pytest.approx({"YES": 4 / 7, "NO": 3 / 7})
    assert result.n_calls == 7
    assert len(provider.calls) == 7
    assert result.cost_usd == pytest.approx(7 * (100 * price.input + 1 * price.output) / 1e6)
    assert ledger.by_caller_and_model()[(client.caller, provider.model)].calls == 7
