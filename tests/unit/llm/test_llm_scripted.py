"""The scripted model of load and chaos runs: refused without its switch, valid for every
stage's schema, and the same answer for the same request."""

from __future__ import annotations

import json
import random
import statistics

import pytest
from pydantic import BaseModel, Field

from reag.elicitation.simulated_user import SimulatedProfileDraft, SimulatedUserDraft
from reag.llm.base import ConfigurationError, Message
from reag.llm.registry import make_client, make_provider
from reag.llm.remote import ModelServerProvider
from reag.llm.scripted import LatentProvider, latency_draw, scripted_provider
from reag.llm.settings import LLMSettings
from reag.oracle.schema import OracleDraft
from reag.retrieval.reasoning import ApplicationAnalysis, DocumentCheck

ALLOWED = LLMSettings(allow_scripted=True, local_url=None)


def test_scripted_models_are_refused_without_the_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REAG_LLM_ALLOW_SCRIPTED", raising=False)
    with pytest.raises(ConfigurationError, match="REAG_LLM_ALLOW_SCRIPTED"):
        make_client("scripted:load", settings=LLMSettings())
    assert not LLMSettings.model_fields["allow_scripted"].default
    assert not LLMSettings().model.startswith("scripted:")


def test_with_a_model_server_the_scripted_model_is_served() -> None:
    settings = LLMSettings(allow_scripted=True, local_url="http://127.0.0.1:1")
    provider = make_provider("scripted:load", settings)
    assert isinstance(provider, ModelServerProvider)
    assert not isinstance(make_provider("scripted:load", settings, in_process=True), type(provider))


class Unknown(BaseModel):
    name: str = Field(min_length=12)
    count: int = Field(ge=3)
    tags: list[str] = Field(min_length=2)
    flag: bool


@pytest.mark.parametrize(
    "schema",
    [
        OracleDraft,
        DocumentCheck,
        ApplicationAnalysis,
        SimulatedProfileDraft,
        SimulatedUserDraft,
        Unknown,
    ],
)
async def test_every_stage_gets_valid_output(schema: type[BaseModel]) -> None:
    client = make_client("scripted:load", settings=ALLOWED)
    prompt = [
        Message(
            "user",
            '<untrusted_document id="d1">\nKeep salt low. Drink water.\n</untrusted_document>',
        )
    ]
    result = await client.structured(prompt, schema)
    assert not result.repaired
    assert isinstance(result.value, schema)
    if isinstance(result.value, DocumentCheck):
        assert [e.sentence for e in result.value.evidence] == ["Keep salt low."]


async def test_the_oracle_writes_as_many_criteria_as_the_name_says() -> None:
    client = make_client("scripted:n4", settings=ALLOWED)
    draft = (await client.structured([Message("user", "x")], OracleDraft)).value
    assert len(draft.criteria) == 4


async def test_annotators_of_one_case_agree_and_answers_repeat() -> None:
    client = make_client("scripted:load", settings=ALLOWED)
    firsts = set()
    for case in range(30):
        answers = [
            (
                await client.label_probs(
                    [Message("user", f"example {a}"), Message("user", f"case {case}")],
                    ["YES", "NO"],
                )
            ).probabilities
            for a in range(3)
        ]
        assert answers[0] == answers[1] == answers[2]
        assert max(answers[0].values()) == pytest.approx(0.97)
        firsts.add(max(answers[0], key=answers[0].__getitem__))
    assert firsts == {"YES", "NO"}  # both labels occur


async def test_ranking_scores_are_deterministic_log_probabilities() -> None:
    client = make_client("scripted:load", settings=ALLOWED)
    one = await client.score_continuation("a document", "is this safe")
    two = await client.score_continuation("a document", "is this safe")
    other = await client.score_continuation("another text", "is this safe")
    assert one.token_logprobs == two.token_logprobs
    assert one.token_logprobs != other.token_logprobs
    assert all(p < 0 for p in one.token_logprobs)
    assert json.dumps(one.mean_logprob)


# --- a hosted model's latency, waited in the client (issue 27) ------------------------------


def test_a_latency_wraps_the_client_side_never_the_model_server() -> None:
    served = LLMSettings(allow_scripted=True, local_url="http://127.0.0.1:1", scripted_latency_s=1)
    provider = make_provider("scripted:load", served)
    assert isinstance(provider, LatentProvider)
    assert isinstance(provider.inner, ModelServerProvider)  # waits here, then asks the server
    # The server itself answers at once: its one-at-a-time queue never holds a latency.
    assert not isinstance(make_provider("scripted:load", served, in_process=True), LatentProvider)
    assert not isinstance(make_provider("scripted:load", ALLOWED), LatentProvider)


async def test_each_call_waits_one_draw_and_reports_it(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr("reag.llm.scripted.asyncio.sleep", sleep)
    draws = iter([0.2, 0.3, 0.4, 0.5])
    provider = LatentProvider(scripted_provider("scripted:load"), lambda: next(draws))
    chat = await provider.chat([Message("user", "q")])
    probs = await provider.label_probs("case", ["yes", "no"])
    group = await provider.label_probs_many(["a", "b"], ["yes", "no"])  # one round trip
    score = await provider.score_continuation("context", "target words")
    assert slept == [0.2, 0.3, 0.4, 0.5]
    assert (chat.latency_s, probs.latency_s, score.latency_s) == (0.2, 0.3, 0.5)
    assert [r.latency_s for r in group] == [0.4, 0.4]
    assert chat.text == (await scripted_provider("scripted:load").chat([Message("user", "q")])).text


def test_latency_draws_have_the_set_mean_or_median() -> None:
    rng = random.Random(7)
    assert latency_draw(0.0, "lognormal", rng)() == 0.0
    assert latency_draw(0.2, "fixed", rng)() == 0.2
    exponential = [latency_draw(0.2, "exponential", rng)() for _ in range(20_000)]
    assert statistics.fmean(exponential) == pytest.approx(0.2, rel=0.05)
    lognormal = [latency_draw(0.2, "lognormal", rng)() for _ in range(20_000)]
    assert statistics.median(lognormal) == pytest.approx(0.2, rel=0.05)
    assert max(lognormal) > 2 * 0.2  # a tail
