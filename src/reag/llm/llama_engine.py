"""One GGUF model loaded by llama.cpp, driven through its low-level batch API.

Why not ``llama_cpp.Llama``'s completion API: reag needs log-probabilities of
*prompt* tokens (ICRALM) and of the next token restricted to a label set, and
the high-level API gets them only with ``logits_all=True``, which keeps a
262k-wide row per token and sorts it in Python. Here a decode asks llama.cpp
for logits only at the positions that are read.

The KV cache holds several token sequences side by side, one per slot
(llama.cpp sequences, ``n_seq_max`` > 1). A request reuses the longest prefix
it shares with one slot's tokens and overwrites the rest of that slot; which
slot, and which one gives way when none matches, is ``reag.llm.kv_slots``'s
policy. With one slot per simulated annotator, each annotator's prompt
prefix (instructions and its own examples) stays cached from one criterion to
the next, and only the case is evaluated again. The full-size sliding-window
cache (``swa_full``) is what makes cutting a sequence back to an arbitrary
prefix valid for Gemma 3.

Each slot has its own KV buffer (``kv_unified = False``): a sequence's cells
and the attention over them then depend only on that sequence's own history,
never on what the other slots hold or were asked in between. In one unified
buffer the cells of interleaved sequences mix, so which cells a position
lands in, and the order of llama.cpp's attention sums, depend on the other
requests. Measured on this model with six slots: 21 label requests with
five different prefixes, interleaved, all gave numbers equal to the last bit
to the same prompts in a one-slot context with separate buffers, and 20 of
them differed with a unified buffer (by up to 0.27 in a label
log-probability).

Reuse must not change the numbers. llama.cpp's CPU kernels round differently
depending on how tokens are grouped into a decode call: measured on this
model, evaluating a prompt in one call or as a cached prefix plus the rest
moved P(YES) by up to 0.04 and single token log-probabilities by up to 0.5.
So every prompt is cut into blocks by a rule that looks only at the tokens
themselves (a block ends after ``block`` tokens, or at a newline once it has
``MIN_BLOCK`` tokens), and the cache is reused only up to a block start. A
position is then always computed in the same block, with the same tokens and
the same cache before it, whatever was evaluated earlier, and a cached prefix
gives bit-identical logits to a fresh evaluation of the same request (the
integration tests check this). Which positions' logits are read belongs to
the request too: llama.cpp runs the last layer only for those rows, so the
same tokens scored at other positions can differ in the fifth decimal.
Ending blocks at newlines means a prompt made of sections (an annotator's
instructions and examples, then the case) is reused up to the section that
differs. Flash attention is off by default, as in
llama-cpp-python; with the block rule both settings gave exact reuse.

Not thread-safe by itself: every public method takes ``lock`` (re-entrant, so
a caller can hold it across a group of calls that should stay together, and
mark them as one group with ``group()``). All engines of a process share that
one lock: each computes on every core, so two models computing at once (the
model server holds the ranker and the judge) add nothing but contention.
Measured on 2 cores, 4 document checks on the 1.5B model and 15 ICRALM scores
on Gemma sent at once took 57.6 s with the shared lock and 56.6 s with a lock
per model; one at a time keeps requests in arrival order (the model server's
turns), so an earlier case's stages are not overtaken by a later case's.
"""

from __future__ import annotations

import ctypes
import json
import logging
import math
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from reag.llm.base import InvalidRequestError, PermanentLLMError
from reag.llm.kv_slots import Slot, SlotTable
from reag.llm.local_models import ChatTemplate

log = logging.getLogger(__name__)

R = TypeVar("R")
LogitsRow = npt.NDArray[np.float32]

# Gemma's turn markers; they are control tokens and are only ever produced by
# ``chat_ids``, never parsed out of message text.
START_OF_TURN = "<start_of_turn>"
END_OF_TURN = "<end_of_turn>"
_GEMMA_ROLES = {"user": "user", "assistant": "model"}
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
# A block may end at a newline once it has this many tokens (see the module docstring).
MIN_BLOCK = 8
DEFAULT_SLOTS = 6

# One computation at a time per process, whichever model (see the module docstring).
_COMPUTE_LOCK = threading.RLock()

# llama.cpp keeps only a raw pointer to the log callback: hold the Python object here.
_LOG_HANDLERS: list[Any] = []


def _prefer_passive_openmp() -> None:
    """Let idle OpenMP threads sleep instead of spinning, unless the user chose otherwise.

    llama.cpp's CPU backend runs on OpenMP. With busy-waiting threads, two
    processes that each hold a model (a service and the model server, or
    two services) fought over 2 shared cores: served calls took 5.5-6.3 s
    against 1.4-2.0 s with passive waiting, measured side by side on this
    machine; in-process calls showed no difference. libgomp reads the
    variable when it is loaded, so this must run before llama_cpp is imported.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _route_llama_logs() -> None:
    """Send llama.cpp's own log lines to Python logging (DEBUG) instead of stderr."""
    if _LOG_HANDLERS:
        return
    import llama_cpp

    native = logging.getLogger("reag.llm.llama_cpp")

    @llama_cpp.llama_log_callback  # type: ignore[untyped-decorator]
    def handler(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
        if native.isEnabledFor(logging.DEBUG):
            native.debug(text.decode("utf-8", errors="replace").rstrip())

    _LOG_HANDLERS.append(handler)
    llama_cpp.llama_log_set(handler, ctypes.c_void_p(0))


@dataclass(frozen=True, slots=True)
class EvalStats:
    """Tokens of one request: ``cached`` of ``prompt`` came from the KV cache of ``slot``."""

    prompt: int
    cached: int
    generated: int = 0
    slot: int = 0


@dataclass(frozen=True, slots=True)
class Generation:
    text: str
    stats: EvalStats
    finish_reason: str  # "stop" (end of turn or a stop string), "length"


def _log_softmax_at(row: LogitsRow, token_ids: Sequence[int]) -> list[float]:
    """log p(token) under the full-vocabulary softmax of one logits row, in float64."""
    wide = row.astype(np.float64)
    peak = float(wide.max())
    lse = peak + math.log(float(np.exp(wide - peak).sum()))
    return [float(wide[t]) - lse for t in token_ids]


class LlamaEngine:
    def __init__(
        self,
        model_path: Path,
        *,
        n_ctx: int = 4096,
        slots: int = DEFAULT_SLOTS,
        n_threads: int | None = None,
        block: int = 32,
        flash_attn: bool = False,
        template: ChatTemplate = "gemma",
        default_system: str | None = None,
    ) -> None:
        """``n_ctx`` is the context of each of the ``slots`` sequences; their KV memory adds up.

        ``template`` and ``default_system`` are the model's own chat format (from its GGUF's
        ``tokenizer.chat_template``), rebuilt here token by token so that text inside a turn
        can never be read as a control token.
        """
        _prefer_passive_openmp()
        import llama_cpp
        from llama_cpp._internals import LlamaBatch, LlamaContext, LlamaModel

        if not model_path.exists():
            raise PermanentLLMError(f"model file {model_path} does not exist")
        if slots < 1:
            raise InvalidRequestError(
                f"the local model needs at least one KV-cache slot, got {slots}"
            )
        _route_llama_logs()
        self._llama = llama_cpp
        self.model_path = model_path
        self.lock = _COMPUTE_LOCK
        threads = n_threads or os.cpu_count() or 1
        # llama-cpp-python's wrappers are untyped; they are held as Any.
        self._model: Any = LlamaModel(
            path_model=str(model_path),
            params=llama_cpp.llama_model_default_params(),
            verbose=False,
        )
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = n_ctx * slots
        params.n_batch = block
        params.n_ubatch = block
        params.flash_attn_type = (
            llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED
            if flash_attn
            else llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
        )
        params.n_threads = threads
        params.n_threads_batch = threads
        params.n_seq_max = slots
        params.kv_unified = False  # a buffer per sequence: see the module docstring
        params.swa_full = True  # keep every position so the cache can be cut back anywhere
        self._ctx: Any = LlamaContext(model=self._model, params=params, verbose=False)
        self._batch: Any = LlamaBatch(n_tokens=block, embd=0, n_seq_max=1, verbose=False)
        self.n_ctx = int(llama_cpp.llama_n_ctx_seq(self._ctx.ctx))
        self.n_slots = slots
        self.block = block
        self.flash_attn = flash_attn
        self.n_vocab = self._model.n_vocab()
        self._vocab = self._model.vocab
        self._slots = SlotTable(slots)
        self._current: Slot = self._slots.slots[0]  # the slot a generation extends
        self._ends_line: dict[int, bool] = {}
        self._piece_buf = ctypes.create_string_buffer(256)
        self.template: ChatTemplate = template
        self.default_system = default_system
        markers = (START_OF_TURN, END_OF_TURN) if template == "gemma" else (IM_START, IM_END)
        self._special: dict[str, list[int]] = {
            marker: list(self._model.tokenize(marker.encode(), add_bos=False, special=True))
            for marker in markers
        }
        if any(len(ids) != 1 for ids in self._special.values()):
            raise PermanentLLMError(
                f"{model_path.name} has no single control token for each of {list(markers)}: "
                f"it does not use the {template} chat template"
            )

    # --- tokens ---------------------------------------------------------------
    def tokenize(self, text: str, *, bos: bool) -> list[int]:
        """Text as plain text: control-token spellings inside it are not honoured."""
        with self.lock:
            return list(self._model.tokenize(text.encode("utf-8"), add_bos=bos, special=False))

    def token_bytes(self, token: int) -> bytes:
        with self.lock:
            n = self._llama.llama_token_to_piece(
                self._vocab, token, self._piece_buf, len(self._piece_buf), 0, False
            )
            return self._piece_buf.raw[: max(n, 0)]

    def chat_ids(self, turns: Sequence[tuple[str, str]]) -> list[int]:
        """The model's chat markup around (role, text) turns, ending with an open reply turn.

        A final assistant turn is left open, so the model continues it. Turn
        text is tokenized as plain text: a "<|im_end|>" inside a user's query
        stays characters, not the end of the turn.
        """
        if self.template == "chatml":
            return self._chatml_ids(turns)
        return self._gemma_ids(turns)

    def _chatml_ids(self, turns: Sequence[tuple[str, str]]) -> list[int]:
        """ChatML as Qwen2.5's and SmolLM2's templates write it: a system turn first (the
        model's default when the chat has none), each turn closed by <|im_end|> and a newline."""
        convo = list(turns)
        if (not convo or convo[0][0] != "system") and self.default_system is not None:
            convo.insert(0, ("system", self.default_system))
        ids = self.tokenize("", bos=True)
        for index, (role, text) in enumerate(convo):
            ids += self._special[IM_START] + self.tokenize(f"{role}\n", bos=False)
            ids += self.tokenize(text, bos=False)
            if index == len(convo) - 1 and role == "assistant":
                return ids
            ids += self._special[IM_END] + self.tokenize("\n", bos=False)
        return ids + self._special[IM_START] + self.tokenize("assistant\n", bos=False)

    def _gemma_ids(self, turns: Sequence[tuple[str, str]]) -> list[int]:
        """Gemma turn markup around (role, text) turns, ending with an open model turn.

        Gemma has no system role: system text opens the first user turn, as
        Gemma's own template does. A final assistant turn is left open, so the
        model continues it.
        """
        system = "\n\n".join(text for role, text in turns if role == "system")
        convo = [(role, text) for role, text in turns if role != "system"]
        if system:
            if convo and convo[0][0] == "user":
                convo[0] = ("user", f"{system}\n\n{convo[0][1]}")
            else:
                convo.insert(0, ("user", system))
        ids = self.tokenize("", bos=True)
        for index, (role, text) in enumerate(convo):
            header = self.tokenize(f"{_GEMMA_ROLES[role]}\n", bos=False)
            ids += self._special[START_OF_TURN] + header
            ids += self.tokenize(text, bos=False)
            if index == len(convo) - 1 and role == "assistant":
                return ids
            ids += self._special[END_OF_TURN] + self.tokenize("\n", bos=False)
        return ids + self._special[START_OF_TURN] + self.tokenize("model\n", bos=False)

    def label_token_sets(self, labels: Sequence[str]) -> dict[str, list[int]]:
        """First tokens by which the model can start each label.

        Casing and a leading space vary with the prompt ("Answer: YES" vs a new
        turn), so each label gets the first token of each such spelling. A token
        that could start two labels counts for neither.
        """
        sets: dict[str, set[int]] = {}
        for label in labels:
            spellings = {label, label.upper(), label.lower(), label.capitalize()}
            firsts = set()
            for spelling in spellings:
                for variant in (spelling, " " + spelling):
                    ids = self.tokenize(variant, bos=False)
                    if ids:
                        firsts.add(ids[0])
            sets[label] = firsts
        shared = {t for a in labels for b in labels if a != b for t in sets[a] & sets[b]}
        result = {label: sorted(sets[label] - shared) for label in labels}
        empty = [label for label, ids in result.items() if not ids]
        if empty:
            raise InvalidRequestError(
                f"labels {empty} share every first token with another label, so the model "
                "cannot tell them apart in one token; use labels that start differently"
            )
        return result

    # --- evaluation -------------------------------------------------------------
    def _is_line_end(self, token: int) -> bool:
        known = self._ends_line.get(token)
        if known is None:
            known = self._ends_line[token] = self.token_bytes(token).endswith(b"\n")
        return known

    def block_starts(self, ids: Sequence[int]) -> list[int]:
        """Where the blocks of ``ids`` start; each start depends only on the tokens before it."""
        starts = [0]
        for i, token in enumerate(ids[:-1]):
            size = i + 1 - starts[-1]
            if size == self.block or (size >= MIN_BLOCK and self._is_line_end(token)):
                starts.append(i + 1)
        return starts

    @property
    def cached_tokens(self) -> int:
        """Tokens held in the KV cache, all slots together."""
        return sum(len(slot.tokens) for slot in self._slots.slots)

    def slot_tokens(self) -> list[int]:
        """Tokens held by each slot, in slot order."""
        with self.lock:
            return [len(slot.tokens) for slot in self._slots.slots]

    def reset(self) -> None:
        """Forget the KV cache, so the next request is evaluated from scratch."""
        with self.lock:
            self._ctx.kv_cache_clear()
            self._slots.clear()

    @contextmanager
    def group(self) -> Iterator[None]:
        """Hold the lock for requests that belong together (one annotator group).

        Within a group a request does not overwrite a slot that an earlier
        request of the group wrote, unless it reuses most of it: the group's
        prompts spread over separate slots, so each annotator's prefix is
        still cached when the next group asks for it.
        """
        with self.lock:
            self._slots.open_group()
            try:
                yield
            finally:
                self._slots.close_group()

    def _forget(self, slot: Slot) -> None:
        self._ctx.kv_cache_seq_rm(slot.seq, 0, -1)
        slot.clear()

    def _evaluate(
        self,
        ids: Sequence[int],
        logit_positions: Sequence[int],
        read: Callable[[int, LogitsRow], R],
    ) -> tuple[dict[int, R], int]:
        """Make the KV cache hold exactly ``ids``; ``read`` the logits at each position.

        Returns what ``read`` gave per position and how many leading tokens
        were reused from the cache. A position whose logits are needed is
        re-evaluated even when cached, since llama.cpp keeps logits only for the
        last decode.
        """
        if not ids:
            raise InvalidRequestError("nothing to evaluate: the prompt is empty")
        if len(ids) > self.n_ctx:
            raise InvalidRequestError(
                f"{len(ids)} tokens do not fit the local model's context of {self.n_ctx}; "
                "shorten the prompt or raise REAG_LLM_LOCAL_CONTEXT"
            )
        wanted = set(logit_positions)
        starts = self.block_starts(ids)
        choice = self._slots.choose(ids, starts, min(*wanted, len(ids) - 1))
        slot = self._current = self._slots.slots[choice.index]
        reuse = choice.reuse
        if reuse < len(slot.tokens) and not self._ctx.kv_cache_seq_rm(slot.seq, reuse, -1):
            self._forget(slot)
            reuse = 0
        tokens = slot.tokens[:reuse]
        out: dict[int, R] = {}
        batch = self._batch.batch
        first = starts.index(reuse)
        for start, end in zip(starts[first:], [*starts[first + 1 :], len(ids)], strict=True):
            chunk = ids[start:end]
            batch.n_tokens = len(chunk)
            for i, token in enumerate(chunk):
                batch.token[i] = token
                batch.pos[i] = start + i
                batch.seq_id[i][0] = slot.seq
                batch.n_seq_id[i] = 1
                batch.logits[i] = (start + i) in wanted
            try:
                self._ctx.decode(self._batch)
            except RuntimeError as exc:
                self._forget(slot)
                raise PermanentLLMError(f"llama.cpp could not evaluate the prompt: {exc}") from exc
            tokens.extend(chunk)
            for i in range(len(chunk)):
                if batch.logits[i]:
                    row = np.ctypeslib.as_array(self._ctx.get_logits_ith(i), shape=(self.n_vocab,))
                    out[start + i] = read(start + i, row)
        self._slots.record(choice.index, reuse, tokens, starts[-1])
        return out, reuse

    def _decode_one(self, token: int) -> None:
        """Append one sampled token to the current slot, keeping its logits for the next sample."""
        slot = self._current
        batch = self._batch.batch
        batch.n_tokens = 1
        batch.token[0] = token
        batch.pos[0] = len(slot.tokens)
        batch.seq_id[0][0] = slot.seq
        batch.n_seq_id[0] = 1
        batch.logits[0] = True
        try:
            self._ctx.decode(self._batch)
        except RuntimeError as exc:
            self._forget(slot)
            raise PermanentLLMError(f"llama.cpp could not extend the generation: {exc}") from exc
        slot.tokens.append(token)

    def score(
        self, context_ids: Sequence[int], target_ids: Sequence[int]
    ) -> tuple[list[float], EvalStats]:
        """log p(target_k | context, target_<k) for each target token, exact."""
        if not context_ids or not target_ids:
            raise InvalidRequestError("continuation scoring needs a non-empty context and target")
        ids = [*context_ids, *target_ids]
        first = len(context_ids) - 1
        with self.lock:
            rows, reused = self._evaluate(
                ids,
                range(first, len(ids) - 1),
                lambda pos, row: _log_softmax_at(row, [ids[pos + 1]])[0],
            )
            slot = self._current.seq
        logprobs = [rows[pos] for pos in range(first, len(ids) - 1)]
        return logprobs, EvalStats(prompt=len(ids), cached=reused, slot=slot)

    def label_logprobs(
        self, ids: Sequence[int], label_tokens: dict[str, list[int]]
    ) -> tuple[dict[str, float], EvalStats]:
        """log p(the next token starts label) for each label, over the full vocabulary."""
        last = len(ids) - 1
        with self.lock:
            rows, reused = self._evaluate(
                ids,
                [last],
                lambda _pos, row: {
                    label: _log_softmax_at(row, tokens) for label, tokens in label_tokens.items()
                },
            )
            slot = self._current.seq
        per_label = {
            label: float(np.logaddexp.reduce(np.array(lps))) for label, lps in rows[last].items()
        }
        return per_label, EvalStats(prompt=len(ids), cached=reused, slot=slot)

    def generate(
        self,
        ids: Sequence[int],
        *,
        max_tokens: int,
        temperature: float,
        seed: int | None,
        stop: Sequence[str] = (),
        json_schema: dict[str, Any] | None = None,
    ) -> Generation:
        """Sample up to ``max_tokens`` tokens; with ``json_schema``, only text that matches it."""
        from llama_cpp._internals import LlamaSampler

        with self.lock:
            if json_schema is not None:
                picker = _GrammarPicker(self, json_schema, temperature, seed)
                try:
                    _, reused = self._evaluate(ids, [len(ids) - 1], lambda _pos, _row: None)
                    return self._sample_loop(picker.pick, len(ids), reused, max_tokens, stop)
                finally:
                    picker.close()
            sampler_type: Any = LlamaSampler  # untyped constructor
            sampler = sampler_type()
            try:
                if temperature <= 0:
                    sampler.add_greedy()
                else:
                    sampler.add_temp(temperature)
                    sampler.add_dist(self._llama.LLAMA_DEFAULT_SEED if seed is None else seed)
                _, reused = self._evaluate(ids, [len(ids) - 1], lambda _pos, _row: None)
                return self._sample_loop(
                    lambda: int(sampler.sample(self._ctx, -1)), len(ids), reused, max_tokens, stop
                )
            finally:
                sampler.close()

    def last_logits(self) -> LogitsRow:
        """The logits row of the last evaluated position (a view; copy to keep it)."""
        return np.ctypeslib.as_array(self._ctx.get_logits_ith(-1), shape=(self.n_vocab,))

    def _sample_loop(
        self,
        pick: Callable[[], int],
        n_prompt: int,
        reused: int,
        max_tokens: int,
        stop: Sequence[str],
    ) -> Generation:
        out = bytearray()
        generated = 0
        finish = "length"
        budget = min(max_tokens, self.n_ctx - n_prompt)
        while generated < budget:
            token = pick()
            if self._llama.llama_vocab_is_eog(self._vocab, token):
                finish = "stop"
                break
            generated += 1
            out += self.token_bytes(token)
            text = out.decode("utf-8", errors="ignore")
            hit = next((s for s in stop if s and s in text), None)
            if hit is not None:
                out = bytearray(text[: text.index(hit)].encode("utf-8"))
                finish = "stop"
                break
            if generated < budget:
                self._decode_one(token)
        return Generation(
            text=out.decode("utf-8", errors="replace"),
            stats=EvalStats(
                prompt=n_prompt, cached=reused, generated=generated, slot=self._current.seq
            ),
            finish_reason=finish,
        )

    def close(self) -> None:
        with self.lock:
            self._batch.close()
            self._ctx.close()
            self._model.close()
            self._slots.clear()


_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])


class _GrammarPicker:
    """Grammar-constrained sampling that asks the grammar about a few candidates, not all.

    llama.cpp's grammar sampler checks every candidate it is given; handed the
    whole 262k-token Gemma vocabulary at each step, it made constrained
    decoding 3x slower than free decoding here (20 against 60 tokens/s on an
    idle machine), and far slower under load. The grammar almost always
    accepts one of the model's top candidates, so it is shown the top
    ``TOP_K`` by logit, and the full vocabulary only when it rejects them all
    (llama.cpp's own common sampler does the same). Greedy decoding is
    unchanged; at temperature > 0 this is top-k sampling among the tokens
    the grammar allows.
    """

    TOP_K = 64

    def __init__(
        self,
        engine: LlamaEngine,
        json_schema: dict[str, Any],
        temperature: float,
        seed: int | None,
    ) -> None:
        import llama_cpp
        from llama_cpp.llama_grammar import LlamaGrammar

        self._llama = llama_cpp
        self._engine = engine
        grammar = LlamaGrammar.from_json_schema(json.dumps(json_schema), verbose=False)
        self._sampler = llama_cpp.llama_sampler_init_grammar(
            engine._vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        if not self._sampler:
            raise InvalidRequestError("llama.cpp could not build a grammar from the JSON schema")
        self._temperature = temperature
        self._rng = np.random.default_rng(seed)
        self._top = (llama_cpp.llama_token_data * self.TOP_K)()
        self._full: Any = None

    def _allowed(self, buffer: Any) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]:
        """Apply the grammar to the candidates in ``buffer``; those it allows, with logits."""
        size = len(buffer)
        array = self._llama.llama_token_data_array(
            data=ctypes.cast(buffer, self._llama.llama_token_data_p),
            size=size,
            selected=-1,
            sorted=False,
        )
        self._llama.llama_sampler_apply(self._sampler, ctypes.byref(array))
        # The grammar sampler masks rejected candidates in place (logit = -inf).
        view = np.frombuffer(buffer, dtype=_TOKEN_DATA, count=size)
        keep = np.isfinite(view["logit"])
        return view["id"][keep], view["logit"][keep].astype(np.float64)

    @staticmethod
    def _fill(buffer: Any, ids: npt.NDArray[Any], logits: npt.NDArray[Any]) -> None:
        view = np.frombuffer(buffer, dtype=_TOKEN_DATA, count=len(buffer))
        view["id"], view["logit"], view["p"] = ids, logits, 0.0

    def pick(self) -> int:
        row = self._engine.last_logits()
        top = np.argpartition(row, -self.TOP_K)[-self.TOP_K :]
        self._fill(self._top, top, row[top])
        ids, logits = self._allowed(self._top)
        if ids.size == 0:
            if self._full is None:
                self._full = (self._llama.llama_token_data * row.shape[0])()
            self._fill(self._full, np.arange(row.shape[0]), row)
            ids, logits = self._allowed(self._full)
            if ids.size == 0:
                raise PermanentLLMError("the JSON grammar allows no token here")
        if self._temperature <= 0:
            token = int(ids[int(np.argmax(logits))])
        else:
            scaled = logits / self._temperature
            weights = np.exp(scaled - scaled.max())
            token = int(self._rng.choice(ids, p=weights / weights.sum()))
        self._llama.llama_sampler_accept(self._sampler, token)
        return token

    def close(self) -> None:
        self._llama.llama_sampler_free(self._sampler)
