"""``reag llm probe|score|serve``: try a model by hand, or share the local one.

``probe`` and ``score`` run one call through the same client the services use
(so they are priced and counted the same way); ``serve`` starts the model
server that services reach with ``REAG_LLM_LOCAL_URL``.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from reag.llm.base import Usage

llm_app = typer.Typer(
    name="llm",
    help="Probe, score with, or serve a language model.",
    no_args_is_help=True,
)

ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        help="e.g. local:gemma-3-270m, openai:gpt-4.1-mini (default: REAG_LLM_MODEL)",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


def _tokens(usage: Usage) -> dict[str, int]:
    return {
        "prompt": usage.prompt_tokens,
        "completion": usage.completion_tokens,
        "cached": usage.cached_tokens,
    }


@llm_app.command()
def probe(
    *,
    prompt: Annotated[str, typer.Option(help="The prompt; its answer should be one label.")],
    labels: Annotated[str, typer.Option(help="Comma-separated closed label set.")] = "YES,NO",
    model: ModelOption = None,
    chat: Annotated[
        bool, typer.Option(help="Send the prompt as a user turn (chat markup) instead of raw text.")
    ] = False,
    n_samples: Annotated[
        int | None,
        typer.Option(
            help="Samples when the model has no log-probabilities (default REAG_LLM_SAMPLING_N).",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Probability of each label as the model's answer to PROMPT."""
    from reag.llm import LLMError, Message
    from reag.llm.registry import make_client

    label_set = [label.strip() for label in labels.split(",") if label.strip()]
    if len(label_set) < 2:
        raise _fail("--labels needs at least two comma-separated labels, e.g. YES,NO")

    async def run() -> dict[str, Any]:
        client = make_client(model)
        try:
            request = [Message("user", prompt)] if chat else prompt
            result = await client.label_probs(request, label_set, n_samples=n_samples)
        finally:
            await client.aclose()
        return {
            "model": result.model,
            "probabilities": result.probabilities,
            "method": result.method,
            "tokens": _tokens(result.usage),
            "cost_usd": result.cost_usd,
            "latency_s": result.latency_s,
            "n_calls": result.n_calls,
            "label_mass": result.label_mass,
        }

    try:
        out = asyncio.run(run())
    except LLMError as exc:
        raise _fail(str(exc)) from exc
    if as_json:
        typer.echo(json.dumps(out))
        return
    probs = "  ".join(f"{k}={v:.4f}" for k, v in out["probabilities"].items())
    typer.echo(
        f"{out['model']}: {probs}  ({out['method']}, {out['tokens']['prompt']} prompt "
        f"tokens, {out['cost_usd']:.6f} USD, {out['latency_s']:.3f} s)"
    )


@llm_app.command()
def score(
    context: Annotated[str, typer.Option(help="Text before the target (e.g. task + document).")],
    target: Annotated[str, typer.Option(help="Text whose tokens are scored (e.g. the query).")],
    model: ModelOption = None,
    as_json: JsonOption = False,
) -> None:
    """Mean log-probability of TARGET's tokens after CONTEXT (the ICRALM score)."""
    from reag.llm import LLMError
    from reag.llm.registry import make_client

    async def run() -> dict[str, Any]:
        client = make_client(model)
        try:
            result = await client.score_continuation(context, target)
        finally:
            await client.aclose()
        return {
            "mean_logprob": result.mean_logprob,
            "n_tokens": result.n_tokens,
            "model": result.model,
            "token_logprobs": result.token_logprobs,
            "tokens": _tokens(result.usage),
            "cost_usd": result.cost_usd,
            "latency_s": result.latency_s,
        }

    try:
        out = asyncio.run(run())
    except LLMError as exc:
        raise _fail(str(exc)) from exc
    if as_json:
        typer.echo(json.dumps(out))
        return
    typer.echo(
        f"{out['model']}: mean log-probability {out['mean_logprob']:.4f} over "
        f"{out['n_tokens']} target tokens ({out['latency_s']:.3f} s)"
    )


@llm_app.command()
def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8765,
    model: ModelOption = None,
) -> None:
    """Load the model once and serve it to services (they set REAG_LLM_LOCAL_URL).

    Other local models that a request names are loaded on first use, once."""
    import uvicorn

    from reag.llm import LLMError, LLMSettings
    from reag.llm.base import Provider
    from reag.llm.registry import make_provider
    from reag.llm.server import create_app

    settings = LLMSettings()
    try:
        provider = make_provider(model or settings.model, settings, in_process=True)
    except LLMError as exc:
        raise _fail(str(exc)) from exc
    typer.echo(
        f"serving {provider.model} on http://{host}:{port} "
        f"(services: REAG_LLM_LOCAL_URL=http://{host}:{port})",
        err=True,
    )

    def load(other: str) -> Provider:
        return make_provider(other, settings, in_process=True)

    uvicorn.run(create_app(provider, load), host=host, port=port, log_level="warning")


def register(app: typer.Typer) -> None:
    app.add_typer(llm_app, name="llm")
