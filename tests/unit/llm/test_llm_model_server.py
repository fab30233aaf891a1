"""The model server and its client agree with the provider they serve, errors included."""

from __future__ import annotations

from collections.abc import Sequence

import httpx
import pytest

from reag.llm.base import (
    CapabilityError,
    ConfigurationError,
    LabelParseError,
    Message,
    RateLimitedError,
    TransientLLMError,
)
from reag.llm.remote import ModelServerProvider
from reag.llm.scripted import FakeProvider
from reag.llm.server import create_app


def label_script(prompt: str | Sequence[Message], labels: Sequence[str]) -> dict[str, float]:
    text = prompt if isinstance(prompt, str) else prompt[-1].content
    yes = 0.9 if "sunny" in text else 0.2
    return {labels[0]: yes, labels[1]: 1 - yes}


def served(provider: FakeProvider, model: str | None = None) -> ModelServerProvider:
    transport = httpx.ASGITransport(app=create_app(provider))
    return ModelServerProvider(
        "http://model-server", model or provider.model, timeout_s=5, transport=transport
    )


async def test_served_results_equal_in_process_results() -> None:
    provider = FakeProvider(
        label_script=label_script, score_script=lambda _c, t: [-0.5] * len(t.split())
    )
    remote = served(provider)

    direct = await provider.label_probs("sunny?", ["YES", "NO"])
    via_server = await remote.label_probs("sunny?", ["YES", "NO"])
    assert via_server.probabilities == direct.probabilities
    assert via_server.usage == direct.usage

    score = await remote.score_continuation("doc", "a b c")
    assert (score.mean_logprob, score.n_tokens) == (-0.5, 3)

    chat = await remote.chat(
        [Message("system", "s"), Message("user", "hi")], max_tokens=9, stop=["\n"]
    )
    assert chat.text == "OK"
    assert provider.calls[-1].options["max_tokens"] == 9
    assert provider.calls[-1].payload == [Message("system", "s"), Message("user", "hi")]


async def test_annotator_group_travels_as_one_request_and_keeps_its_order() -> None:
    provider = FakeProvider(label_script=label_script)
    remote = served(provider)
    prompts: list[str | Sequence[Message]] = [
        "sunny?",
        [Message("user", "rainy?")],
        "sunny again?",
    ]
    results = await remote.label_probs_many(prompts, ["YES", "NO"])
    assert [r.probabilities["YES"] for r in results] == [0.9, 0.2, 0.9]


async def test_provider_errors_cross_the_wire_as_the_same_type() -> None:
    remote = served(FakeProvider())  # no score script: CapabilityError
    with pytest.raises(CapabilityError, match="model server"):
        await remote.score_continuation("doc", "q")

    def limited(_p: object, _l: object) -> dict[str, float]:
        raise RateLimitedError("busy")

    with pytest.raises(RateLimitedError):
        await served(FakeProvider(label_script=limited)).label_probs("x", ["YES", "NO"])

    def unparseable(_p: object, _l: object) -> dict[str, float]:
        raise LabelParseError("no label", ["maybe", "perhaps"])

    with pytest.raises(LabelParseError) as info:
        await served(FakeProvider(label_script=unparseable)).label_probs("x", ["YES", "NO"])
    assert info.value.samples == ["maybe", "perhaps"]


async def test_a_server_serving_another_model_is_refused() -> None:
    remote = served(FakeProvider(model="fake:a"), model="local:gemma-3-270m")
    with pytest.raises(ConfigurationError, match="serves fake:a"):
        await remote.label_probs("x", ["YES", "NO"])


async def test_an_unreachable_server_is_transient_and_names_the_setting() -> None:
    remote = ModelServerProvider("http://127.0.0.1:9", "local:gemma-3-270m", timeout_s=1)
    with pytest.raises(TransientLLMError, match="REAG_LLM_LOCAL_URL"):
        await remote.label_probs("x", ["YES", "NO"])
    await remote.aclose()


async def test_healthz_names_the_model() -> None:
    assert await served(FakeProvider(model="fake:h")).health() == {
        "status": "ok",
        "model": "fake:h",
        "loaded": "fake:h",
    }


async def test_another_model_a_request_names_is_loaded_once_by_the_loader() -> None:
    loads: list[str] = []

    def load(model: str) -> FakeProvider:
        loads.append(model)
        return FakeProvider(model=model, label_script=label_script)

    transport = httpx.ASGITransport(app=create_app(FakeProvider(model="fake:default"), load))
    other = ModelServerProvider(
        "http://model-server", "fake:other", timeout_s=5, transport=transport
    )
    for _ in range(2):
        result = await other.label_probs("Answer YES or NO.", ["YES", "NO"])
        assert result.model == "fake:other"
    assert loads == ["fake:other"]
    assert (await other.health())["loaded"] == "fake:default,fake:other"


async def test_a_server_without_a_loader_serves_its_model_only() -> None:
    transport = httpx.ASGITransport(app=create_app(FakeProvider(model="fake:default")))
    other = ModelServerProvider(
        "http://model-server", "fake:other", timeout_s=5, transport=transport
    )
    with pytest.raises(ConfigurationError, match="serves fake:default only"):
        await other.label_probs("Answer YES or NO.", ["YES", "NO"])
