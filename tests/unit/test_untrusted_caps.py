"""Every fenced field is capped, and the cap changes no prompt of the committed labelled items.

The judge's stored scores (examples/nutrition/scores) and its prompt version
hold only for the exact prompt bytes they were scored on, so the cap must sit
far above every field those items hold: the digest below is of every judge
prompt (chat and raw text, every stored annotator configuration) rendered by
the code before the cap existed.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from reag.calibration.store import CalibrationStore
from reag.calibration_run.clients import build_judges
from reag.calibration_run.files import read_labelled
from reag.judging.settings import CascadeSettings
from reag.llm.client import LLMClient
from reag.llm.scripted import FakeProvider
from reag.oracle.prompt import build_messages
from reag.untrusted import ATTRIBUTE_MAX_CHARS, FIELD_MAX_CHARS, cap, fence, fenced
from reag.v1 import events_pb2 as pb

ROOT = Path(__file__).resolve().parents[2]
NUTRITION = ROOT / "examples" / "nutrition"
# sha256 of every prompt below, rendered by main before the cap (commit 7066565).
PROMPTS_SHA256 = "f6c034138f5be657868129a66120c93f01ac32432b61156aa47e9b44f138897d"


def test_cap_marks_how_much_it_cut_and_leaves_shorter_text_alone() -> None:
    assert cap("  ab  ", 6) == "  ab  "
    assert cap("abcdefghij", 4) == "abcd [... 6 characters cut]"


def test_a_fence_quotes_at_most_the_field_cap_whatever_its_limit() -> None:
    huge = "x" * (FIELD_MAX_CHARS * 40)
    for limit in (None, FIELD_MAX_CHARS * 100):
        (body,) = fenced("untrusted_query", fence("untrusted_query", huge, limit))
        assert body == "x" * FIELD_MAX_CHARS + f" [... {FIELD_MAX_CHARS * 39} characters cut]"
    opening = fence("untrusted_document", "d", attributes={"title": "t" * 10_000})
    assert f'title="{"t" * ATTRIBUTE_MAX_CHARS} [... {10_000 - ATTRIBUTE_MAX_CHARS}' in opening


def test_a_huge_event_cannot_blow_up_the_oracle_prompt() -> None:
    """One MiB in each unclipped field of a traffic event still makes a bounded prompt."""
    mib = "q" * (1 << 20)
    interpretation = pb.Interpretation(
        intention=pb.Intention(
            query=mib,
            situation=mib,
            persona=pb.Persona(category_id="c", description=mib),
            actual_response=mib,
        ),
        analysis=mib,
    )
    size = sum(len(m.content) for m in build_messages(interpretation))
    assert size < 6 * FIELD_MAX_CHARS, size


def _stored_versions() -> set[str]:
    """The judge prompt versions of the stored score files, from their names."""
    found = set()
    for path in (NUTRITION / "scores").glob("*.jsonl"):
        version, config, digest = path.name.split(".")[-4:-1]  # judge-prompt-v4, n1k3s0, ...
        found.add(f"{version}/{config}/{digest}")
    assert found, "no stored scores"
    return found


def _configuration(version: str) -> tuple[int, int, int]:
    """(N annotators, K examples, seed) of a prompt version."""
    n, rest = version.split("/")[1][1:].split("k")
    k, seed = rest.split("s")
    return int(n), int(k), int(seed)


@pytest.fixture(scope="module")
def labelled_prompts(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Every judge prompt of every committed labelled item, in a fixed order."""
    items = read_labelled(NUTRITION / "calibration.jsonl")
    store = CalibrationStore.open(f"sqlite:///{tmp_path_factory.mktemp('cal') / 'c.db'}")
    store.add_items(items)
    rendered: list[str] = []
    stored = _stored_versions()
    for n, k, seed in sorted({_configuration(v) for v in stored}):
        settings = CascadeSettings(annotators=n, tier_annotators=str(n), examples=k, seed=seed)
        for model in ("fake:chat", "local:smollm2-135m-instruct"):
            client = LLMClient(FakeProvider(model=model))
            (judge,) = build_judges(store, "nutrition", [client], settings)
            assert judge.prompt_version in stored  # the same examples as the stored scores
            for item in store.items("nutrition"):
                for prompt in judge.prompts(item.request, exclude_item=item.item_id):
                    rendered.append(
                        prompt
                        if isinstance(prompt, str)
                        else "\n".join(f"{m.role}: {m.content}" for m in prompt)
                    )
    return rendered


def test_the_labelled_items_judge_prompts_are_byte_identical(labelled_prompts: list[str]) -> None:
    digest = hashlib.sha256("\x00".join(labelled_prompts).encode()).hexdigest()
    assert digest == PROMPTS_SHA256


def test_the_cap_is_far_above_every_labelled_prompts_fenced_field(
    labelled_prompts: list[str],
) -> None:
    longest = 0
    for prompt in labelled_prompts:
        for tag in ("untrusted_app_response", "untrusted_user_query", "untrusted_condition"):
            longest = max([longest, *(len(body) for body in fenced(tag, prompt))])
    assert 0 < longest * 10 < FIELD_MAX_CHARS
