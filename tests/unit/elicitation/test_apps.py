"""The typed app manifest: targets, sample app, seed queries; errors name file and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from reag.apps import HttpJsonTarget, OpenAITarget, find_manifest, load_app, load_seed_queries
from reag.corpus.errors import ManifestError

EXAMPLE = Path(__file__).parents[3] / "examples/nutrition/app.yaml"


def write(tmp_path: Path, body: str, queries: str | None = None) -> Path:
    (tmp_path / "corpus.md").write_text("---\nkind: requirement\n---\n## FR-1 x\ntext\n")
    if queries is not None:
        (tmp_path / "queries.yaml").write_text(queries)
    path = tmp_path / "app.yaml"
    path.write_text("name: demo\ncorpus: [corpus.md]\n" + body)
    return path


def test_the_example_manifest_is_fully_typed() -> None:
    app = load_app(EXAMPLE)
    assert app.name == "nutrition"
    assert app.title
    assert isinstance(app.target, OpenAITarget)
    assert "{query}" in app.target.user_template
    assert app.system_prompt().startswith("You are NutriLens")
    seeds = app.load_seed_queries()
    assert len(seeds) >= 20
    assert all(s.text for s in seeds)
    with_label = [s for s in seeds if s.context]
    assert with_label
    assert with_label[0].context_title == "product label"


def test_an_http_target_is_told_apart_by_kind(tmp_path: Path) -> None:
    app = load_app(
        write(tmp_path, "target:\n  kind: http\n  url: http://x/ask\n  response_path: a.b\n")
    )
    assert isinstance(app.target, HttpJsonTarget)
    assert app.target.response_path == "a.b"
    assert app.target.request_template == {
        "query": "{query_with_context}",
        "profile": "$profile_json",
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("target:\n  kind: grpc\n  url: x\n", "target"),
        ("target:\n  kind: openai\n", "target.openai.base_url"),
        ("target:\n  kind: openai\n  base_url: x\n  apikey: 1\n", "target.openai.apikey"),
        ("sample_app:\n  model: x\n", "sample_app.system_prompt"),
    ],
)
def test_a_bad_section_names_the_file_and_the_field(tmp_path: Path, body: str, field: str) -> None:
    with pytest.raises(ManifestError, match=rf"app.yaml: field '{field}'"):
        load_app(write(tmp_path, body))


def test_seed_queries_accept_text_or_mappings(tmp_path: Path) -> None:
    path = tmp_path / "q.yaml"
    path.write_text("- plain question\n- {query: second, persona: ckd, context: {salt: 2}}\n")
    first, second = load_seed_queries(path)
    assert (first.id, first.text, first.context) == ("q1", "plain question", "")
    assert (second.text, second.persona_hint) == ("second", "ckd")
    assert second.context.strip() == "salt: 2"
    assert second.context_title == "attachment"
    assert second.full_text() == "second\n\n[attachment]\nsalt: 2"


@pytest.mark.parametrize("text", ["queries: []\n", "queries:\n  - {id: a}\n", "[: bad"])
def test_bad_seed_files_are_named(tmp_path: Path, text: str) -> None:
    path = tmp_path / "q.yaml"
    path.write_text(text)
    with pytest.raises(ManifestError, match=r"q\.yaml"):
        load_seed_queries(path)


def test_a_missing_system_prompt_file_is_named(tmp_path: Path) -> None:
    app = load_app(write(tmp_path, "sample_app:\n  system_prompt: nope.md\n"))
    with pytest.raises(ManifestError, match=r"nope\.md"):
        app.system_prompt()


def test_find_manifest_searches_the_given_folders(tmp_path: Path) -> None:
    (tmp_path / "b" / "demo").mkdir(parents=True)
    (tmp_path / "b" / "demo" / "app.yaml").write_text("name: demo\n")
    assert find_manifest("demo", [tmp_path / "a", tmp_path / "b"]) == (
        tmp_path / "b" / "demo" / "app.yaml"
    )
    with pytest.raises(ManifestError, match="--manifest"):
        find_manifest("other", [tmp_path / "a"])
