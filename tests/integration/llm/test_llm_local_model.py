"""The real local model (Gemma 3 270M on llama.cpp): the numbers reag relies on.

These check mechanics and exactness, not judging quality: the model is a
270M base model whose verdicts carry no signal.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest
from pydantic import BaseModel, Field

from reag.llm import LLMClient, Message, StructuredOutputError
from reag.llm.llama_engine import LlamaEngine

pytestmark = pytest.mark.llm

LABELS = ["YES", "NO"]
TASK = "Task: find the document that answers the user's question.\nDocument: "
QUERY = "How much sodium may an adult with high blood pressure eat per day?"
RELEVANT = (
    "Adults with high blood pressure should keep their sodium intake below 1,500 mg per "
    "day; salty snacks, cured meats and pickles are the main sources to cut."
)
UNRELATED = (
    "The city library opens at nine in the morning on weekdays and lends board games to "
    "members on Fridays."
)


def context_for(document: str) -> str:
    return f"{TASK}{document}\nQuestion: "


@pytest.mark.parametrize(
    "prompt",
    [
        "Is Paris the capital of France? Answer YES or NO.\nAnswer:",
        [
            Message("system", "You are a strict judge."),
            Message("user", "Does 'eat more salt' suit a user with hypertension? YES or NO?"),
        ],
    ],
    ids=["raw", "chat"],
)
async def test_label_probabilities_sum_to_one(
    client: LLMClient, prompt: str | list[Message]
) -> None:
    result = await client.label_probs(prompt, LABELS)

    assert result.method == "logprobs"
    assert set(result.probabilities) == set(LABELS)
    assert sum(result.probabilities.values()) == pytest.approx(1.0, abs=0.01)
    assert all(0.0 < p < 1.0 for p in result.probabilities.values())
    assert result.label_mass is not None
    assert 0.0 < result.label_mass <= 1.0
    assert result.usage.prompt_tokens > 0
    assert result.cost_usd == 0.0


async def test_three_labels_sum_to_one(client: LLMClient) -> None:
    result = await client.label_probs(
        "Is the sky green? Answer YES, NO or UNSURE.\nAnswer:", ["YES", "NO", "UNSURE"]
    )
    assert sum(result.probabilities.values()) == pytest.approx(1.0, abs=0.01)


async def test_continuation_score_equals_an_independent_full_logits_evaluation(
    client: LLMClient, engine: LlamaEngine
) -> None:
    """Our score against numpy over every logit of a separate llama.cpp evaluation.

    The separate evaluation (llama-cpp-python's high-level ``Llama`` with all
    logits kept) is fed the same blocks as the engine, because llama.cpp's
    rounding depends on how tokens are grouped into a decode call.
    """
    import llama_cpp

    context = context_for(RELEVANT)
    result = await client.score_continuation(context, QUERY)

    independent = llama_cpp.Llama(
        model_path=str(engine.model_path),
        n_ctx=256,
        n_batch=engine.block,
        n_ubatch=engine.block,
        logits_all=True,
        flash_attn=engine.flash_attn,
        n_threads=2,
        verbose=False,
    )
    context_ids = independent.tokenize(context.encode(), add_bos=True, special=False)
    target_ids = independent.tokenize(QUERY.encode(), add_bos=False, special=False)
    assert result.target_token_ids == target_ids
    ids = context_ids + target_ids
    starts = engine.block_starts(ids)
    assert len(starts) > 2  # the prompt really is evaluated in several blocks
    for start, end in zip(starts, [*starts[1:], len(ids)], strict=True):
        independent.eval(ids[start:end])
    logits = np.asarray(independent.scores[: len(ids)], dtype=np.float64)
    peak = logits.max(axis=1, keepdims=True)
    log_softmax = logits - (peak + np.log(np.exp(logits - peak).sum(axis=1, keepdims=True)))
    expected = [
        float(log_softmax[len(context_ids) - 1 + k, token]) for k, token in enumerate(target_ids)
    ]
    independent.close()

    assert result.n_tokens == len(target_ids)
    assert result.token_logprobs == pytest.approx(expected, abs=1e-6)
    assert result.mean_logprob == pytest.approx(sum(expected) / len(expected), abs=1e-6)
    assert all(lp < 0 for lp in result.token_logprobs)


async def test_document_with_the_answer_scores_the_query_higher(client: LLMClient) -> None:
    relevant = await client.score_continuation(context_for(RELEVANT), QUERY)
    unrelated = await client.score_continuation(context_for(UNRELATED), QUERY)
    assert relevant.n_tokens == unrelated.n_tokens
    assert relevant.mean_logprob > unrelated.mean_logprob + 0.5


async def test_a_reused_prefix_gives_the_same_numbers_as_a_fresh_evaluation(
    client: LLMClient, engine: LlamaEngine
) -> None:
    shared = "Judge whether the response meets the criterion. " * 30 + "\n"
    prompts: list[str | list[Message]] = [
        f"{shared}Annotator {j}: when unsure, answer NO.\nVerdict:" for j in range(5)
    ]

    engine.reset()
    together = await client.label_probs_many(prompts, LABELS)
    fresh = []
    for prompt in prompts:
        engine.reset()
        fresh.append(await client.label_probs(prompt, LABELS))
    again = await client.label_probs(prompts[-1], LABELS)  # everything but a block is cached

    assert [r.usage.cached_tokens for r in together][1:] == [together[1].usage.cached_tokens] * 4
    # the annotators' own line follows a newline, where a block starts: only it is evaluated
    own_line = len(engine.tokenize("Annotator 4: when unsure, answer NO.\nVerdict:", bos=False))
    assert together[1].usage.cached_tokens >= together[1].usage.prompt_tokens - own_line - 1
    for a, b in zip(together, fresh, strict=True):
        assert a.probabilities == b.probabilities
    assert again.usage.cached_tokens > 0
    assert again.probabilities == fresh[-1].probabilities


async def test_repeated_scoring_is_reproducible_whatever_the_cache_holds(
    client: LLMClient, engine: LlamaEngine
) -> None:
    engine.reset()
    first = await client.score_continuation(context_for(RELEVANT), QUERY)
    await client.score_continuation(context_for(UNRELATED), QUERY)
    second = await client.score_continuation(context_for(RELEVANT), QUERY)
    assert second.token_logprobs == first.token_logprobs


class Verdict(BaseModel):
    verdict: Literal["YES", "NO"]
    reason: str = Field(max_length=60)


async def test_grammar_constrained_output_parses_on_the_first_attempt(client: LLMClient) -> None:
    """The schema bounds the object's length, so within max_tokens it is always complete."""
    ask = [
        Message(
            "user",
            "Does a lentil soup suit a user with hypertension? Reply in JSON "
            'with "verdict" (YES or NO) and "reason".',
        )
    ]
    result = await client.structured(ask, Verdict, max_tokens=200)
    assert (result.repaired, result.n_calls) == (False, 1)
    assert result.value.verdict in {"YES", "NO"}
    assert Verdict.model_validate_json(result.raw) == result.value


async def test_broken_json_from_the_model_is_reported_with_its_raw_text(
    client: LLMClient,
) -> None:
    """Too few tokens for the object: both attempts are cut off, and the error keeps the text."""
    ask = [Message("user", "Give a verdict as JSON.")]
    with pytest.raises(StructuredOutputError) as info:
        await client.structured(ask, Verdict, max_tokens=6)
    assert info.value.raw.startswith("{")
    assert len(info.value.raw) > 1


async def test_chat_respects_max_tokens_and_stop(client: LLMClient) -> None:
    result = await client.chat(
        [Message("user", "Count: one, two, three, four, five")],
        max_tokens=12,
        temperature=0.7,
        seed=7,
        stop=["\n\n"],
    )
    assert 0 < result.usage.completion_tokens <= 12
    assert "\n\n" not in result.text
    assert result.usage.prompt_tokens > 0


async def test_label_first_tokens_do_not_overlap(engine: LlamaEngine) -> None:
    sets = engine.label_token_sets(["YES", "NO"])
    assert sets["YES"]
    assert sets["NO"]
    assert not set(sets["YES"]) & set(sets["NO"])


def test_weights_come_from_the_installed_package(engine: LlamaEngine) -> None:
    assert Path(engine.model_path).stat().st_size > 200 * 2**20
    assert math.isfinite(engine.n_vocab)
    assert engine.n_vocab > 200_000


async def test_top_k_grammar_sampling_equals_full_vocabulary_grammar_sampling(
    engine: LlamaEngine,
) -> None:
    """The fast constrained sampler picks exactly what llama.cpp's full-vocabulary grammar
    sampler picks under greedy decoding, token for token."""
    import json

    from llama_cpp._internals import LlamaSampler
    from llama_cpp.llama_grammar import LlamaGrammar

    ids = engine.chat_ids([("user", "Judge a soda for a diabetic user. Reply in JSON.")])
    schema = Verdict.model_json_schema()
    fast = engine.generate(ids, max_tokens=40, temperature=0.0, seed=1, json_schema=schema)
    with engine.lock:
        sampler_type: Any = LlamaSampler  # llama-cpp-python's wrappers are untyped
        sampler = sampler_type()
        sampler.add_grammar(
            engine._model, LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
        )
        sampler.add_greedy()
        _, reused = engine._evaluate(ids, [len(ids) - 1], lambda _p, _r: None)
        slow = engine._sample_loop(
            lambda: int(sampler.sample(engine._ctx, -1)), len(ids), reused, 40, ()
        )
        sampler.close()
    assert fast.text == slow.text
    assert fast.text.startswith("{")
