from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from shell.cli.corpus import register

Write = Callable[[str, str], Path]


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> typer.Typer:
    monkeypatch.setenv("REAG_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("REAG_STORE_DSN", raising=False)
    app = typer.Typer()
    register(app)

    @app.callback()
    def _root() -> None:
        """Makes `corpus` a sub-command, as in the real CLI."""

    return app


def listed(cli: typer.Typer) -> list[dict[str, str]]:
    result = CliRunner().invoke(cli, ["corpus", "list", "--app", "nutri", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_add_then_list(cli: typer.Typer, write: Write) -> None:
    path = write("requirements.md", "## FR-1 Upload\nPhotos.\n\n## FR-2 Flags\nSugar.\n")
    result = CliRunner().invoke(cli, ["corpus", "add", str(path), "--app", "nutri"])
    assert result.exit_code == 0, result.output
    assert "2 added" in result.stdout
    assert [d["address"] for d in listed(cli)] == ["requirement/FR-1", "requirement/FR-2"]


def test_a_bad_file_fails_the_command_and_keeps_the_previous_corpus(
    cli: typer.Typer, write: Write
) -> None:
    first = write("requirements.md", "## FR-1 Upload\nPhotos.\n")
    assert CliRunner().invoke(cli, ["corpus", "add", str(first), "--app", "nutri"]).exit_code == 0

    changed = write("requirements.md", "## FR-1 Upload\nChanged.\n\n## FR-9 New\nNew.\n")
    bad = write("srs.csv", "heading,text\nWishlist,pony\n")
    result = CliRunner().invoke(cli, ["corpus", "add", str(changed), str(bad), "--app", "nutri"])
    assert result.exit_code == 1
    assert str(bad) in result.stderr
    assert "bad CSV header" in result.stderr
    assert [(d["address"], d["content"]) for d in listed(cli)] == [("requirement/FR-1", "Photos.")]


def test_skipped_rows_are_reported_and_the_rest_is_stored(cli: typer.Typer, write: Write) -> None:
    srs = write(
        "srs.csv",
        "section,subsection,content\n"
        "Functional Requirements,FR-1 Upload,Photos.\n"
        "Functional Requirements,FR-2 Flags,\n"
        "Wishlist,W-1 Pony,a private wish\n",
    )
    result = CliRunner().invoke(cli, ["corpus", "add", str(srs), "--app", "nutri"])
    assert result.exit_code == 0, result.output
    assert "1 added" in result.stdout
    assert "2 skipped" in result.stdout
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [
        f"warning: skipped {srs}:3: row of subsection 'FR-2 Flags' of section "
        "'Functional Requirements' has no content",
        f"warning: skipped {srs}:4: unknown section 'Wishlist': name it after a document kind "
        "(e.g. 'Functional Requirements', 'User Stories', 'Personas', 'Domain Knowledge', "
        "'Background', 'Non-Functional Requirements'); see docs/retrieval.md",
    ]
    assert "private" not in result.output
    assert [d["address"] for d in listed(cli)] == ["requirement/FR-1"]


def test_nothing_left_to_ingest_exits_1(cli: typer.Typer, write: Write) -> None:
    srs = write("srs.csv", "section,subsection,content\nFunctional Requirements,FR-2 Flags,\n")
    result = CliRunner().invoke(cli, ["corpus", "add", str(srs), "--app", "nutri"])
    assert result.exit_code == 1
    assert "nothing was ingested" in result.stderr
    assert "FR-2 Flags" in result.stderr
    assert listed(cli) == []


def test_strict_stores_nothing_when_a_row_would_be_skipped(cli: typer.Typer, write: Write) -> None:
    srs = write(
        "srs.csv",
        "section,subsection,content\n"
        "Functional Requirements,FR-1 Upload,Photos.\n"
        "Functional Requirements,FR-2 Flags,\n",
    )
    result = CliRunner().invoke(cli, ["corpus", "add", str(srs), "--app", "nutri", "--strict"])
    assert result.exit_code == 1
    assert f"{srs}:3: row of subsection 'FR-2 Flags'" in result.stderr
    assert listed(cli) == []


def test_manifest_adds_its_corpus_files_relative_to_itself(cli: typer.Typer, write: Write) -> None:
    write("app/corpus/requirements.md", "## FR-1 Upload\nPhotos.\n")
    write("app/corpus/guide.pdf.md", "## G-1 Salt\nUnder 5 g.\n")
    manifest = write(
        "app/app.yaml",
        "name: nutri\n"
        "corpus:\n  - corpus/requirements.md\n  - {path: corpus/guide.pdf.md, kind: domain}\n"
        'seed_queries: ["is this ok"]\n',
    )
    result = CliRunner().invoke(cli, ["corpus", "add", "--manifest", str(manifest)])
    assert result.exit_code == 0, result.output
    assert [d["address"] for d in listed(cli)] == ["domain_knowledge/G-1", "requirement/FR-1"]


def test_manifest_naming_a_missing_file_ingests_nothing(cli: typer.Typer, write: Write) -> None:
    write("app/corpus/requirements.md", "## FR-1 Upload\nPhotos.\n")
    manifest = write("app/app.yaml", "name: nutri\ncorpus: [corpus/requirements.md, gone.md]\n")
    result = CliRunner().invoke(cli, ["corpus", "add", "--manifest", str(manifest)])
    assert result.exit_code == 1
    assert "gone.md: no such file" in result.stderr
    assert listed(cli) == []


def test_add_without_app_or_manifest_is_a_usage_error(cli: typer.Typer, write: Write) -> None:
    path = write("requirements.md", "## FR-1 Upload\nPhotos.\n")
    result = CliRunner().invoke(cli, ["corpus", "add", str(path)])
    assert result.exit_code == 2
    assert "--app is required" in result.stderr


def test_manifest_stores_its_traffic_policy_and_refuses_a_bad_one_before_anything(
    cli: typer.Typer, write: Write, tmp_path: Path
) -> None:
    from reag.traffic.policy import PolicyStore

    write("app/corpus/requirements.md", "## FR-1 Upload\nPhotos.\n")
    good = write(
        "app/app.yaml",
        "name: nutri\ncorpus: [corpus/requirements.md]\n"
        "traffic:\n  shadow: {sample_rate: 0.25, max_cases_per_minute: 30}\n"
        "  redaction: {allow_attributes: [diet]}\n",
    )
    result = CliRunner().invoke(cli, ["corpus", "add", "--manifest", str(good)])
    assert result.exit_code == 0, result.output
    assert "traffic policy stored" in result.stdout
    store = PolicyStore.open(f"sqlite:///{tmp_path / 'state' / 'reag.db'}")
    policy = store.get("nutri")
    assert policy.shadow.sample_rate == 0.25
    assert policy.shadow.max_cases_per_minute == 30
    assert policy.redaction.allow_attributes == ["diet"]

    bad = write(
        "other/app.yaml",
        "name: other\ncorpus: [../app/corpus/requirements.md]\n"
        "traffic: {shadow: {sample_rate: 2}}\n",
    )
    result = CliRunner().invoke(cli, ["corpus", "add", "--manifest", str(bad)])
    assert result.exit_code == 2
    assert "traffic.shadow.sample_rate" in result.stderr
    listing = CliRunner().invoke(cli, ["corpus", "list", "--app", "other", "--json"])
    assert listing.stdout.strip() in {"[]", ""}  # nothing stored for the refused manifest
