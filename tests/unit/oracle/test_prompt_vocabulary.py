"""No prompt module speaks the example's domain (issue 24: oracles that hold on any app).

The example's domain vocabulary is derived, not listed: the 50 highest TF-IDF
terms of the nutrition corpus (one document per corpus) against the other
labelled corpora (banking, Debian Policy), among the terms those corpora never
use. Every module named ``prompt*`` under src/reag (the oracle's, retrieval's,
the judge's, drafting's) must contain none of them. A handful of reag's own
words, which the nutrition corpus uses because it describes an LLM app under
acceptance test, are not the domain's and are named in ``REAG_WORDS``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path

import pytest

from reag.corpus.manifest import load_manifest

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = "nutrition"
OTHERS = ("banking", "debian_policy")
TOP = 50
REAG_WORDS = frozenset({"persona", "label", "labelled", "acceptance", "llm", "matters"})
"""reag's own vocabulary (personas, judge labels, labelled cases, acceptance tests, LLMs)
and one generic English word ("matters"), which the nutrition corpus happens to use."""

_WORD = re.compile(r"[a-z]{3,}")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def corpus_text(app: str) -> str:
    documents = load_manifest(ROOT / "examples" / app / "app.yaml").load_documents()
    return "\n".join(f"{d.title}\n{d.content}" for d in documents)


def domain_vocabulary() -> list[str]:
    """The example corpus's top TF-IDF terms that no other corpus uses (sublinear tf)."""
    counts = {app: Counter(words(corpus_text(app))) for app in (EXAMPLE, *OTHERS)}
    n = len(counts)
    df = Counter(term for c in counts.values() for term in c)
    others = set().union(*(counts[app] for app in OTHERS))
    scores = {
        term: (1 + math.log(tf)) * (math.log((1 + n) / (1 + df[term])) + 1)
        for term, tf in counts[EXAMPLE].items()
        if term not in others
    }
    return sorted(scores, key=lambda t: (-scores[t], t))[:TOP]


def prompt_modules() -> list[Path]:
    return sorted((ROOT / "src" / "reag").rglob("prompt*.py"))


@pytest.fixture(scope="module")
def vocabulary() -> list[str]:
    return domain_vocabulary()


def test_the_vocabulary_is_the_domains(vocabulary: list[str]) -> None:
    """The derivation finds the domain: these would break if it found something else."""
    assert len(vocabulary) == TOP
    for term in ("potassium", "sodium", "gluten", "allergen", "protein"):
        assert term in vocabulary
    assert "the" not in vocabulary
    assert "must" not in vocabulary


def test_the_prompt_modules_are_the_four_stages() -> None:
    names = {p.relative_to(ROOT / "src" / "reag").as_posix() for p in prompt_modules()}
    assert {
        "oracle/prompt.py",
        "judging/prompt.py",
        "retrieval/prompts.py",
        "drafting/prompts.py",
    } <= names


@pytest.mark.parametrize("module", prompt_modules(), ids=lambda p: p.parent.name + "/" + p.name)
def test_no_prompt_module_holds_a_domain_word(module: Path, vocabulary: list[str]) -> None:
    found = sorted((set(vocabulary) - REAG_WORDS) & set(words(module.read_text())))
    assert not found, f"{module.name} speaks the example's domain: {found}"


def test_the_simulated_users_prompt_holds_no_domain_word(vocabulary: list[str]) -> None:
    module = ROOT / "src" / "reag" / "elicitation" / "simulated_user.py"
    assert not (set(vocabulary) - REAG_WORDS) & set(words(module.read_text()))


def test_the_oracle_prompt_no_longer_speaks_of_the_users_health() -> None:
    """The one domain phrase issue 24 found in the oracle's system prompt; "health" is used
    by another corpus too, so the derived vocabulary alone would not catch it."""
    from reag.oracle.prompt import SYSTEM_PROMPT

    assert "health" not in SYSTEM_PROMPT.lower()
