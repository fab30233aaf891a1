"""``reag llm serve`` in its own process gives the same numbers as the model in process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest
from typer.testing import CliRunner

from reag.llm import LLMClient, LLMSettings, Message
from reag.llm.local import LocalProvider
from reag.llm.registry import make_client
from shell.cli.main import app
from shell.stack.ports import free_port

pytestmark = [pytest.mark.llm, pytest.mark.slow]

SHARED = "Judge whether the response meets the criterion. " * 12


SERVE = [sys.executable, "-m", "shell.cli.main", "llm", "serve"]


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "REAG_LLM_LOCAL_URL"}
    proc = subprocess.Popen(
        # The in-process twin (local_llm_client) is Gemma: the server must serve it too.
        [*SERVE, "--port", str(port), "--model", "local:gemma-3-270m"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                detail = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                raise RuntimeError(f"model server exited: {detail}")
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("model server did not become healthy within 120 s")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def served(server_url: str) -> LLMClient:
    return make_client("local:gemma-3-270m", settings=LLMSettings(local_url=server_url))


@pytest.fixture
def in_process(local_llm_client: object) -> LLMClient:
    assert isinstance(local_llm_client, LLMClient)
    assert isinstance(local_llm_client.provider, LocalProvider)
    local_llm_client.provider.engine.reset()
    return local_llm_client


def test_server_reports_its_model(served: LLMClient, server_url: str) -> None:
    health = httpx.get(f"{server_url}/healthz").json()
    assert health["status"] == "ok"
    assert health["model"] == "local:gemma-3-270m"
    assert "local:gemma-3-270m" in health["loaded"].split(",")
    assert served.model == "local:gemma-3-270m"


async def test_another_local_model_is_loaded_once_when_a_request_names_it(
    server_url: str,
) -> None:
    """The tiers of the embedded cascade run different local models through one server."""
    other = make_client("local:smollm2-135m-instruct", settings=LLMSettings(local_url=server_url))
    served = await other.label_probs(
        [Message("user", "Answer YES or NO: is 2 > 1?")], ["YES", "NO"]
    )
    in_process = await make_client(
        "local:smollm2-135m-instruct", settings=LLMSettings(local_url=None, local_slots=1)
    ).label_probs([Message("user", "Answer YES or NO: is 2 > 1?")], ["YES", "NO"])
    assert served.model == "local:smollm2-135m-instruct"
    assert served.probabilities["YES"] == pytest.approx(in_process.probabilities["YES"], abs=1e-6)
    async with httpx.AsyncClient() as http:
        loaded = (await http.get(f"{server_url}/healthz")).json()["loaded"].split(",")
    assert loaded.count("local:smollm2-135m-instruct") == 1


async def test_served_label_probs_and_scores_equal_in_process(
    served: LLMClient, in_process: LLMClient
) -> None:
    prompts: list[str | list[Message]] = [f"{SHARED}\nAnnotator {j}.\nVerdict:" for j in range(5)]
    prompts.append([Message("user", "Is water wet? Answer YES or NO.")])

    local = await in_process.label_probs_many(prompts, ["YES", "NO"])
    remote = await served.label_probs_many(prompts, ["YES", "NO"])

    assert [r.probabilities for r in remote] == [r.probabilities for r in local]
    assert [r.usage for r in remote] == [r.usage for r in local]

    context, target = "Document: Paris is the capital of France.\nQuestion: ", "Where is Paris?"
    local_score = await in_process.score_continuation(context, target)
    remote_score = await served.score_continuation(context, target)
    assert remote_score.token_logprobs == local_score.token_logprobs
    assert remote_score.target_token_ids == local_score.target_token_ids


async def test_served_greedy_chat_equals_in_process(
    served: LLMClient, in_process: LLMClient
) -> None:
    ask = [Message("user", "Name a vegetable.")]
    local = await in_process.chat(ask, max_tokens=8)
    remote = await served.chat(ask, max_tokens=8)
    assert remote.text == local.text
    assert remote.usage.completion_tokens == local.usage.completion_tokens


def test_cli_probe_and_score_print_the_promised_json(in_process: LLMClient) -> None:
    runner = CliRunner()
    probe = runner.invoke(
        app,
        [
            "llm",
            "probe",
            "--model",
            "local:gemma-3-270m",
            "--prompt",
            "Is the sky blue? Answer YES or NO.\nAnswer:",
            "--labels",
            "YES,NO",
            "--json",
        ],
    )
    assert probe.exit_code == 0, probe.output
    out = json.loads(probe.output)
    assert set(out) >= {"probabilities", "method", "tokens", "cost_usd", "latency_s"}
    assert sum(out["probabilities"].values()) == pytest.approx(1.0, abs=0.01)
    assert out["method"] == "logprobs"
    assert out["tokens"]["prompt"] > 0
    assert out["cost_usd"] == 0.0

    score = runner.invoke(
        app,
        [
            "llm",
            "score",
            "--model",
            "local:gemma-3-270m",
            "--context",
            "Paris is the capital of France.",
            "--target",
            "What is the capital of France?",
            "--json",
        ],
    )
    assert score.exit_code == 0, score.output
    out = json.loads(score.output)
    assert out["n_tokens"] == len(out["token_logprobs"]) > 0
    assert out["mean_logprob"] == pytest.approx(sum(out["token_logprobs"]) / out["n_tokens"])


def test_cli_reports_configuration_errors_plainly() -> None:
    result = CliRunner().invoke(
        app,
        ["llm", "score", "--model", "gemini:gemini-2.5-flash", "--context", "c", "--target", "t"],
        env={"GEMINI_API_KEY": "", "GOOGLE_API_KEY": "", "REAG_LLM_GEMINI_API_KEY": ""},
    )
    assert result.exit_code == 2
    assert "REAG_LLM_GEMINI_API_KEY" in result.output
