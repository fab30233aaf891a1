"""Several KV-cache slots on the real local model: exact numbers, and what stays cached.

Judge prompts here are the real template (``reag.judging.prompt``) over a small
example pool; the base model's verdicts carry no signal, so only the numbers'
exactness and the cache's reuse are checked.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reag.judging.exemplars import draw_annotator_sets
from reag.judging.prompt import annotator_prefix, annotator_prompts
from reag.llm import LLMClient, Message
from reag.llm.base import LabelProbs
from reag.llm.kv_slots import common_prefix
from reag.llm.llama_engine import LlamaEngine
from reag.llm.local import LocalProvider
from reag.v1 import events_pb2 as pb
from tests.integration.tiny_labelled_pool import TINY_POOL

pytestmark = pytest.mark.llm

LABELS = ["YES", "NO"]
N = 3
SETS = draw_annotator_sets(TINY_POOL, N, 2, seed=0).sets
CASES = [
    ("Warns that sugar is high.", "This cereal has 30 g of sugar per 100 g, which is high."),
    ("Flags gluten.", "These crackers are made with wheat flour."),
    ("Mentions potassium.", "The salt substitute is potassium chloride; ask your renal team."),
]


def request(index: int) -> pb.JudgeRequest:
    criterion, response = CASES[index]
    req = pb.JudgeRequest(
        criterion=pb.Criterion(criterion_id=f"slots-{index}/c0", text=criterion),
        query="Can I eat this every day?",
        actual_response=response,
        persona=pb.Persona(category_id="t2d", category_name="Type 2 diabetes"),
    )
    req.meta.case_id, req.meta.app = f"slots-{index}", "nutrition"
    return req


def one_off(index: int) -> str:
    return f"Note {index}: the lighthouse keeper counted {index} ships today.\n" * 6 + "Answer:"


@pytest.fixture(scope="module", autouse=True)
def _enough_slots(engine: LlamaEngine) -> None:
    assert engine.n_slots > N, "the default needs a slot per annotator and one"


@pytest.fixture(scope="module")
def one_slot(engine: LlamaEngine) -> Iterator[LLMClient]:
    """The same model with a single slot: what the engine computed before it had several."""
    single = LlamaEngine(engine.model_path, n_ctx=2048, slots=1, block=engine.block)
    yield LLMClient(LocalProvider(single))
    single.close()


async def test_interleaved_slots_give_the_numbers_of_fresh_one_slot_evaluations(
    client: LLMClient, engine: LlamaEngine, one_slot: LLMClient
) -> None:
    engine.reset()
    asked: list[tuple[str, LabelProbs]] = []
    scores = []
    for index in range(len(CASES)):
        prompts: list[str | list[Message]] = list(
            annotator_prompts(request(index), SETS, chat=False)
        )
        group = await client.label_probs_many(prompts, LABELS)
        asked += [(str(p), r) for p, r in zip(prompts, group, strict=True)]
        asked.append((one_off(index), await client.label_probs(one_off(index), LABELS)))
        scores.append(await client.score_continuation(one_off(index), " The keeper slept."))
    assert sum(r.usage.cached_tokens for _, r in asked) > 0  # the cache really was used

    for prompt, result in asked:
        engine.reset()
        fresh = await client.label_probs(prompt, LABELS)
        single = await one_slot.label_probs(prompt, LABELS)
        assert result.probabilities == fresh.probabilities
        assert result.probabilities == single.probabilities
    for index, score in enumerate(scores):
        single_score = await one_slot.score_continuation(one_off(index), " The keeper slept.")
        assert score.token_logprobs == single_score.token_logprobs


async def test_annotator_prefixes_stay_cached_across_judgements_and_one_offs(
    client: LLMClient, engine: LlamaEngine
) -> None:
    engine.reset()

    def ids(prompt: str) -> list[int]:
        return engine.tokenize(prompt, bos=True)

    prefix_tokens = [len(ids(annotator_prefix(s))) for s in SETS]
    cold = await client.label_probs_many(
        list(annotator_prompts(request(0), SETS, chat=False)), LABELS
    )
    for index in range(4):  # other callers' one-off prompts in between
        await client.score_continuation(one_off(index), " The keeper slept.")
    warm = []
    for index in (1, 2):
        prompts: list[str | list[Message]] = list(
            annotator_prompts(request(index), SETS, chat=False)
        )
        warm.append(await client.label_probs_many(prompts, LABELS))

    assert [r.usage.cached_tokens for r in cold] == [0] * N
    for index, group in zip((1, 2), warm, strict=True):
        before = [ids(str(p)) for p in annotator_prompts(request(index - 1), SETS, chat=False)]
        now = [ids(str(p)) for p in annotator_prompts(request(index), SETS, chat=False)]
        for j, result in enumerate(group):
            # at least the annotator's prefix but its last, unclosed block; at most
            # what the prompt shares with the same annotator's previous one
            assert prefix_tokens[j] - engine.block <= result.usage.cached_tokens
            assert result.usage.cached_tokens <= common_prefix(before[j], now[j])
