"""The scripted model of load and chaos runs: refused without its switch, valid for every
stage's schema, and the same answer for the same request."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, Field

from reag.elicitation.simulated_user import SimulatedProfileDraft, SimulatedUserDraft
from reag.llm.base import ConfigurationError, Message
from reag.llm.registry import make_client, make_provider
from reag.llm.remote import ModelServerProvider
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
