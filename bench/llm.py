"""Benchmark: the local model (Gemma 3 270M, llama.cpp) on this machine, in process and served.

Prints, measured side by side in one run:
- prompt tokens/s (a ~400-token prompt evaluated from scratch) and generated
  tokens/s (greedy, after a short prompt);
- p50/p95 latency of one YES/NO label-probability call on a ~400-token prompt,
  and of N=5 simulated-annotator calls whose prompts are that prompt plus a
  ~23-token annotator part: as one group reusing the prefix's KV cache, and as
  five calls from scratch, interleaved repetition by repetition; the ratio of
  the group to one call (goal: at most 1.5);
- the same single call and group through the model server (``reag llm serve``
  in a child process, over HTTP on localhost) against in process;
- the annotator group on the real judge prompt: N=5 annotators judging items
  of the example app's labelled set (``examples/nutrition/calibration.jsonl``,
  annotator sets drawn and pinned in a calibration store in a temporary
  state directory), in the previous layout (case first, each annotator's
  examples after) on a one-slot engine against the current layout (each
  annotator's examples first, the case after) on the multi-slot engine, item
  by item in alternating order; tokens evaluated and seconds per judgement.

Every repetition uses a prompt that differs from the others in its first
sentence, so nothing is reused across repetitions and in-process and served
calls see the same cache conditions. Latencies are wall time through
``LLMClient``, as a service sees them. The machine's load average is printed
with the numbers: other work on these 2 shared cores moves them.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import httpx

from reag.calibration.store import CalibrationItem, CalibrationStore
from reag.calibration_run.files import read_labelled
from reag.judging import prompt as judge_prompt
from reag.judging.exemplars import AnnotatorSets, LabelledExample
from reag.judging.pinning import pinned_annotator_sets
from reag.judging.settings import CascadeSettings
from reag.llm import Caller, LLMClient, LLMSettings, Message
from reag.llm.llama_engine import LlamaEngine
from reag.llm.local import LocalProvider
from reag.llm.registry import make_client
from reag.settings import ReagSettings
from reag.v1 import events_pb2 as pb
from shell.stack.ports import free_port

LABELS = ["YES", "NO"]
N_ANNOTATORS = 5
TARGET_PROMPT_TOKENS = 400
REPS_SINGLE = 10
REPS_GROUP = 8
EXAMPLE_SET = (
    Path(__file__).resolve().parent.parent / "examples" / "nutrition" / "calibration.jsonl"
)
JUDGE_ITEMS = 10

INSTRUCTIONS = (
    "You are an acceptance tester for a nutrition assistant. Decide whether the assistant's "
    "response satisfies the pass/fail criterion below, given the user's profile. Answer with "
    "exactly one word, YES or NO.\n"
)
CASE = (
    "Profile: 58 years old, hypertension diagnosed four years ago, vegetarian, walks daily, "
    "takes an ACE inhibitor, prefers quick recipes, cooks for two. "
    "Query: what can I have for dinner tonight that is filling but good for my blood pressure? "
    "Response: Try a lentil and spinach stew with garlic, cumin and lemon; it is rich in "
    "potassium and fibre. Use low-sodium stock, skip added salt, and serve it with brown rice. "
    "Avoid pickles, processed cheese and instant soups, which are high in sodium. "
    "Criterion: the response recommends only low-sodium options and names at least one "
    "high-sodium food to avoid. "
)


@dataclass(frozen=True)
class Timing:
    samples: list[float]

    @property
    def p50(self) -> float:
        return statistics.median(self.samples)

    @property
    def p95(self) -> float:
        ordered = sorted(self.samples)
        return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]

    def __str__(self) -> str:
        return f"p50 {self.p50:6.3f} s  p95 {self.p95:6.3f} s  (n={len(self.samples)})"


def shared_prompt(client: LLMClient, rep: int) -> str:
    """About TARGET_PROMPT_TOKENS tokens; the first sentence makes each repetition unique."""
    assert isinstance(client.provider, LocalProvider)
    engine = client.provider.engine
    text = f"Case {rep}-{os.getpid()}. {INSTRUCTIONS}"
    while len(engine.tokenize(text, bos=True)) < TARGET_PROMPT_TOKENS:
        text += CASE
    ids = engine.tokenize(text, bos=False)[: TARGET_PROMPT_TOKENS - 1]
    return b"".join(engine.token_bytes(t) for t in ids).decode("utf-8", errors="ignore")


def annotator_prompts(prefix: str) -> list[str | list[Message]]:
    return [
        f"{prefix}\nAnnotator {j}: in past cases you answered "
        f"{'YES' if j % 2 else 'NO'} when the criterion was only partly met.\nVerdict:"
        for j in range(N_ANNOTATORS)
    ]


async def timed(call: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await call()
    return time.perf_counter() - started


async def throughput(client: LLMClient) -> tuple[float, float, int]:
    """Prompt and generated tokens per second (best of three each) and the prompt length."""
    assert isinstance(client.provider, LocalProvider)
    engine = client.provider.engine
    prompt_rates, gen_rates = [], []
    n_prompt = 0
    for rep in range(3):
        ids = engine.tokenize(shared_prompt(client, 1000 + rep), bos=True)
        n_prompt = len(ids)
        engine.reset()
        started = time.perf_counter()
        await asyncio.to_thread(engine.label_logprobs, ids, engine.label_token_sets(LABELS))
        prompt_rates.append(n_prompt / (time.perf_counter() - started))
        short = engine.tokenize(f"Write a long story about a lighthouse, part {rep}.", bos=True)
        engine.reset()
        await asyncio.to_thread(engine.label_logprobs, short, engine.label_token_sets(LABELS))
        started = time.perf_counter()
        out = await asyncio.to_thread(
            engine.generate, short, max_tokens=64, temperature=0.0, seed=None
        )
        # the ~12-token prompt is evaluated again too: a negligible part of the time
        gen_rates.append(out.stats.generated / (time.perf_counter() - started))
    return max(prompt_rates), max(gen_rates), n_prompt


async def evaluated_tokens(client: LLMClient) -> tuple[int, int]:
    """Tokens the model evaluates for one call and for a reused group: load-independent."""
    assert isinstance(client.provider, LocalProvider)
    client.provider.engine.reset()
    one = await client.label_probs(shared_prompt(client, 900), LABELS)
    group = await client.label_probs_many(annotator_prompts(shared_prompt(client, 901)), LABELS)
    fresh = one.usage.prompt_tokens - one.usage.cached_tokens
    return fresh, sum(r.usage.prompt_tokens - r.usage.cached_tokens for r in group)


async def annotator_costs(client: LLMClient) -> tuple[Timing, Timing, Timing]:
    """One call, the reused group and five from scratch, interleaved rep by rep.

    Interleaving puts the three under the same machine load, so their ratio
    means something on a shared machine.
    """
    assert isinstance(client.provider, LocalProvider)
    engine = client.provider.engine
    single, group, scratch = [], [], []
    for rep in range(REPS_GROUP):
        prompt = shared_prompt(client, rep)
        single.append(await timed(partial(client.label_probs, prompt, LABELS)))
        prompts = annotator_prompts(shared_prompt(client, 100 + rep))
        group.append(await timed(partial(client.label_probs_many, prompts, LABELS)))
        total = 0.0
        for annotator in annotator_prompts(shared_prompt(client, 200 + rep)):
            engine.reset()
            total += await timed(partial(client.label_probs, annotator, LABELS))
        scratch.append(total)
    return Timing(single), Timing(group), Timing(scratch)


async def side_by_side(
    local: LLMClient, served: LLMClient
) -> tuple[Timing, Timing, Timing, Timing]:
    """Alternate in-process and served calls, so both see the same machine load."""
    single: dict[str, list[float]] = {"local": [], "served": []}
    group: dict[str, list[float]] = {"local": [], "served": []}
    clients = {"local": local, "served": served}
    for rep in range(REPS_SINGLE):
        for name, client in clients.items():
            prompt = shared_prompt(local, 2000 + 10 * rep + len(name))
            single[name].append(await timed(partial(client.label_probs, prompt, LABELS)))
    for rep in range(REPS_GROUP):
        for name, client in clients.items():
            prompts = annotator_prompts(shared_prompt(local, 3000 + 10 * rep + len(name)))
            group[name].append(await timed(partial(client.label_probs_many, prompts, LABELS)))
    return (
        Timing(single["local"]),
        Timing(single["served"]),
        Timing(group["local"]),
        Timing(group["served"]),
    )


def rss_mib() -> float:
    """Resident memory of this process (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def previous_layout(
    request: pb.JudgeRequest, sets: Sequence[Sequence[LabelledExample]]
) -> list[str]:
    """judge-prompt-v2's order of the same sections: the case first, then each annotator's
    examples and the question."""
    instructions = judge_prompt.INSTRUCTIONS
    case = "\n## Case under test\n" + judge_prompt.case_section(request) + "\n"
    return [
        instructions
        + case
        + judge_prompt.annotator_prefix(own)[len(instructions) :]
        + f"{judge_prompt.QUESTION}\nAnswer:"
        for own in sets
    ]


@dataclass
class Judgements:
    """Tokens evaluated (not served from the cache) and wall seconds, one entry per judgement."""

    tokens: list[int]
    seconds: list[float]

    def add(self, tokens: int, seconds: float) -> None:
        self.tokens.append(tokens)
        self.seconds.append(seconds)

    def line(self) -> str:
        return (
            f"tokens mean {statistics.mean(self.tokens):6.0f} (min {min(self.tokens)}, "
            f"max {max(self.tokens)})  seconds p50 {statistics.median(self.seconds):5.2f}, "
            f"mean {statistics.mean(self.seconds):5.2f}  (n={len(self.tokens)})"
        )


async def judgement(client: LLMClient, prompts: Sequence[judge_prompt.Prompt]) -> tuple[int, float]:
    """One annotator group, as ``TierJudge.judge`` sends it: tokens evaluated and seconds."""
    started = time.perf_counter()
    results = await client.label_probs_many(list(prompts), LABELS)
    seconds = time.perf_counter() - started
    return sum(r.usage.prompt_tokens - r.usage.cached_tokens for r in results), seconds


def example_app() -> tuple[AnnotatorSets, list[CalibrationItem], CascadeSettings]:
    """The example app's pinned annotator sets and items that are not among their examples."""
    cascade = CascadeSettings()
    with tempfile.TemporaryDirectory(prefix="reag-bench-") as state:
        dsn = ReagSettings(state_dir=Path(state), store_dsn=None).resolved_store_dsn()
        store = CalibrationStore.open(dsn)
        items = read_labelled(EXAMPLE_SET)
        app = items[0].app
        store.add_items(items)
        sets = pinned_annotator_sets(store, app, cascade.annotators, cascade.examples, cascade.seed)
        cases = [i for i in store.items(app) if i.item_id not in sets.item_ids]
    return sets, cases[: JUDGE_ITEMS + 1], cascade


async def judge_prompt_layouts(current: LLMClient, settings: LLMSettings) -> None:
    """Previous layout on one slot against the current layout on the engine's slots."""
    assert isinstance(current.provider, LocalProvider)
    engine = current.provider.engine
    sets, cases, cascade = example_app()
    one_slot = LlamaEngine(
        engine.model_path,
        n_ctx=settings.local_context,
        slots=1,
        n_threads=settings.local_threads,
        block=engine.block,
    )
    previous = LLMClient(LocalProvider(one_slot), Caller("bench"))
    engine.reset()
    old, new = Judgements([], []), Judgements([], [])
    cold: dict[str, int] = {}
    try:
        for n, item in enumerate(cases):
            runs: list[tuple[str, LLMClient, list[judge_prompt.Prompt], Judgements]] = [
                ("previous", previous, list(previous_layout(item.request, sets.sets)), old),
                (
                    "current",
                    current,
                    judge_prompt.annotator_prompts(item.request, sets.sets, chat=False),
                    new,
                ),
            ]
            for name, client, prompts, into in runs if n % 2 == 0 else runs[::-1]:
                tokens, seconds = await judgement(client, prompts)
                if n == 0:
                    cold[name] = tokens
                else:
                    into.add(tokens, seconds)
    finally:
        one_slot.close()
    print(
        f"annotator group on the judge prompt: {EXAMPLE_SET.parent.name} example app, "
        f"N={sets.n_annotators}, K={cascade.examples}, {len(cases) - 1} items not among the "
        "annotators' examples (after one cold judgement per layout)"
    )
    print(f"previous layout (case first), 1 slot:         {old.line()}")
    print(f"current layout (examples first), {engine.n_slots} slots:  {new.line()}")
    token_ratio = statistics.mean(old.tokens) / statistics.mean(new.tokens)
    time_ratio = statistics.median(old.seconds) / statistics.median(new.seconds)
    print(
        f"previous / current: tokens {token_ratio:.2f}x, seconds (p50) {time_ratio:.2f}x; "
        f"cold first judgement: previous {cold['previous']} tokens, current {cold['current']}",
        flush=True,
    )


def start_server(port: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "REAG_LLM_LOCAL_URL"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "shell.cli.main", "llm", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the model server exited during start-up")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("the model server did not become healthy within 120 s")


async def bench() -> None:
    settings = LLMSettings(local_url=None)
    caller = Caller("bench")
    load_before = os.getloadavg()
    started = time.perf_counter()
    client = make_client("local:gemma-3-270m", caller=caller, settings=settings)
    assert isinstance(client.provider, LocalProvider)
    engine = client.provider.engine
    print(
        f"model load {time.perf_counter() - started:.1f} s; llama.cpp on {os.cpu_count()} "
        f"cores, threads={settings.local_threads or os.cpu_count()}, block={engine.block}, "
        f"{engine.n_slots} KV-cache slots of {engine.n_ctx} tokens; process RSS "
        f"{rss_mib():.0f} MiB; load average {load_before[0]:.1f}",
        flush=True,
    )

    prompt_tps, gen_tps, n_prompt = await throughput(client)
    print(f"prompt tokens/s     {prompt_tps:7.0f}   (best of 3, {n_prompt}-token prompt)")
    print(f"generated tokens/s  {gen_tps:7.1f}   (best of 3, 64 greedy tokens)", flush=True)

    single, group, scratch = await annotator_costs(client)
    one_tokens, group_tokens = await evaluated_tokens(client)
    print(f"one YES/NO call, {n_prompt} tokens:            {single}")
    print(f"{N_ANNOTATORS} annotators, shared prefix reused:    {group}")
    print(f"{N_ANNOTATORS} annotators, each from scratch:       {scratch}")
    print(
        f"ratio {N_ANNOTATORS} annotators / one call (p50): reused {group.p50 / single.p50:.2f}x "
        f"(goal <= 1.5x), from scratch {scratch.p50 / single.p50:.2f}x",
        flush=True,
    )
    print(
        f"tokens evaluated: one call {one_tokens}, {N_ANNOTATORS} annotators {group_tokens} "
        f"({group_tokens / one_tokens:.2f}x; the rest came from the KV cache)",
        flush=True,
    )

    port = free_port()
    server = start_server(port)
    try:
        served = make_client(
            caller=caller, settings=LLMSettings(local_url=f"http://127.0.0.1:{port}")
        )
        await served.label_probs("warm up", LABELS)
        local_single, remote_single, local_group, remote_group = await side_by_side(client, served)
        await served.aclose()
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(f"in process,   one call:      {local_single}")
    print(
        f"model server, one call:      {remote_single}   "
        f"({remote_single.p50 - local_single.p50:+.3f} s p50)"
    )
    print(f"in process,   {N_ANNOTATORS} annotators: {local_group}")
    print(
        f"model server, {N_ANNOTATORS} annotators: {remote_group}   "
        f"({remote_group.p50 - local_group.p50:+.3f} s p50)"
    )
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)

    await judge_prompt_layouts(client, settings)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


def run() -> None:
    asyncio.run(bench())


if __name__ == "__main__":
    run()
