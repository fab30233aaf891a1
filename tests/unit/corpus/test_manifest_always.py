"""The manifest's ``always`` list marks documents for the retriever, and refuses a typo."""

from __future__ import annotations

from pathlib import Path

import pytest

from reag.corpus.errors import ManifestError
from reag.corpus.manifest import load_manifest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _write(tmp_path: Path, always: str) -> Path:
    (tmp_path / "req.md").write_text(
        "---\nkind: requirement\n---\n## FR-1 Scope\nOnly energy.\n\n## FR-2 Bills\nBills.\n"
    )
    manifest = tmp_path / "app.yaml"
    manifest.write_text(f"name: x\ncorpus: [req.md]\nalways: {always}\n")
    return manifest


def test_listed_documents_are_marked_always_and_no_others(tmp_path: Path) -> None:
    documents = load_manifest(_write(tmp_path, "[requirement/FR-1]")).load_documents()
    marked = {d.address: bool(d.metadata.get("always")) for d in documents}
    assert marked == {"requirement/FR-1": True, "requirement/FR-2": False}


def test_an_always_address_no_file_defines_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="requirement/FR-3"):
        load_manifest(_write(tmp_path, "[requirement/FR-3]")).load_documents()


@pytest.mark.parametrize("app", ["banking", "nutrition", "home_energy"])
def test_the_examples_mark_their_scope_or_safety_sections(app: str) -> None:
    manifest = load_manifest(EXAMPLES / app / "app.yaml")
    documents = manifest.load_documents()
    assert manifest.always
    assert {d.address for d in documents if d.metadata.get("always")} == set(manifest.always)
