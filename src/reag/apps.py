"""The app manifest (``app.yaml``) as every stage past ingestion reads it.

``reag.corpus.manifest`` validates what ingestion needs (``name``, ``corpus``)
and keeps the other sections as raw YAML; this module types those sections:
the seed queries the simulated users are grounded in, the sample app's prompt
and model, and the *target*, i.e. how to reach the LLM app under test. Paths
are relative to the manifest's folder.

A target is one of two adapters (``reag.elicitation.targets``):

```yaml
target:                      # an OpenAI-compatible chat endpoint
  kind: openai
  base_url: http://127.0.0.1:8700/v1
  model: nutrilens
  user_template: "PROFILE: {profile}\\nQUESTION: {query}\\nLABEL: {context}"

target:                      # any HTTP endpoint that takes and returns JSON
  kind: http
  url: http://127.0.0.1:9000/ask
  request_template: {question: "{query}", user: "$profile_json"}
  response_path: answer.text
```
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from reag.corpus.errors import ManifestError
from reag.corpus.manifest import CorpusEntry, load_manifest
from reag.traffic.policy import TrafficPolicy

# Placeholders a target template may use; see ``reag.elicitation.targets.render``.
TEMPLATE_FIELDS = ("query", "context", "query_with_context", "profile", "persona_hint", "user_id")


class SeedQuery(BaseModel):
    """A real user query; simulated users are grounded in these (REAG 3.1)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str = ""
    text: str = Field(min_length=1)
    persona_hint: str = ""
    # What the user attached besides the words (the nutrition app: the label as OCR read it).
    context: str = ""
    context_title: str = "attachment"

    def full_text(self, query: str | None = None) -> str:
        """The query as the app receives it: the words, then the attachment, if any."""
        words = (query if query is not None else self.text).strip()
        if not self.context.strip():
            return words
        return f"{words}\n\n[{self.context_title}]\n{self.context.strip()}"


class SampleAppConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    system_prompt: str = Field(description="File with the app's system prompt.")
    model: str | None = Field(
        default=None, description="Model the sample app answers with; unset: REAG_LLM_MODEL."
    )
    served_name: str = Field(
        default="", description="Model name the OpenAI-compatible endpoint reports."
    )
    temperature: float = Field(default=0.3, ge=0, le=2)
    max_tokens: int = Field(default=400, ge=16, le=8192)


class OpenAITarget(BaseModel):
    """An OpenAI-compatible ``/chat/completions`` endpoint, called with the openai SDK."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["openai"] = "openai"
    base_url: str = Field(description="E.g. http://127.0.0.1:8700/v1.")
    model: str = Field(default="default", description="The ``model`` field sent.")
    api_key_env: str | None = Field(
        default=None, description="Environment variable holding the key (never the key)."
    )
    system_template: str | None = Field(
        default="User profile:\n{profile}",
        description="A system message sent before the user turn; null sends none.",
    )
    user_template: str = Field(default="{query_with_context}", description="The user turn.")
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1)
    timeout_s: float = Field(default=120.0, gt=0)


class HttpJsonTarget(BaseModel):
    """Any endpoint that takes a JSON request and answers JSON, called with httpx.

    In ``request_template`` a string that is exactly ``$profile_json`` becomes
    the profile as a JSON object; other strings have ``{field}`` placeholders
    filled (``TEMPLATE_FIELDS``).
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["http"] = "http"
    url: str
    method: Literal["POST", "PUT"] = "POST"
    headers: dict[str, str] = Field(default_factory=dict)
    headers_from_env: dict[str, str] = Field(
        default_factory=dict,
        description="Header name -> environment variable with its value (for secrets).",
    )
    request_template: Any = Field(
        default_factory=lambda: {"query": "{query_with_context}", "profile": "$profile_json"}
    )
    response_path: str = Field(
        default="response",
        description="Dotted path to the answer text in the JSON reply; integers index lists.",
    )
    timeout_s: float = Field(default=120.0, gt=0)


TargetConfig = Annotated[OpenAITarget | HttpJsonTarget, Field(discriminator="kind")]


class AppConfig(BaseModel):
    """An app as its manifest describes it, with every section typed."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(min_length=1)
    title: str = ""
    description: str = ""
    corpus: list[CorpusEntry] = Field(default_factory=list)
    seed_queries: str | None = Field(default=None, description="YAML file of seed queries.")
    calibration: str | None = Field(default=None, description="JSONL calibration set.")
    calibration_scores: str | None = Field(
        default=None,
        description=(
            "Folder of judge scores made beforehand on the calibration set, one file per "
            "model and prompt version (`make bench` writes them). Calibration imports a "
            "tier's file only after judging a random sample of it again."
        ),
    )
    sample_app: SampleAppConfig | None = None
    target: TargetConfig | None = None
    traffic: TrafficPolicy | None = Field(
        default=None,
        description="Redaction and shadow controls of the app's live traffic; unset: the "
        "default policy (every built-in recogniser, all traffic, no budget).",
    )
    base_dir: Path = Field(default=Path("."), exclude=True)

    @field_validator("title", "description", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        return "" if value is None else value

    def resolve(self, relative: str) -> Path:
        return self.base_dir / relative

    def traffic_policy(self) -> TrafficPolicy:
        """The manifest's ``traffic:`` section, or the default policy when it has none."""
        return self.traffic if self.traffic is not None else TrafficPolicy()

    def load_seed_queries(self) -> list[SeedQuery]:
        """The manifest's seed queries; ``ManifestError`` names the file and the problem."""
        if not self.seed_queries:
            return []
        return load_seed_queries(self.resolve(self.seed_queries))

    def system_prompt(self) -> str:
        if self.sample_app is None:
            raise ManifestError(f"app {self.name!r} has no 'sample_app' section in its manifest")
        path = self.resolve(self.sample_app.system_prompt)
        try:
            return path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ManifestError(
                f"{path}: cannot read the sample app's system prompt: {exc.strerror or exc}"
            ) from exc


def load_app(path: Path) -> AppConfig:
    """The manifest at ``path``, validated by the corpus loader and then section by section."""
    manifest = load_manifest(path)
    data = {**manifest.model_dump(), "base_dir": manifest.base_dir}
    try:
        return AppConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise ManifestError(f"{path}: field {field!r}: {first['msg']}") from exc


def _seed_entry(raw: Any, index: int, path: Path) -> SeedQuery:
    if isinstance(raw, str):
        return SeedQuery(id=f"q{index}", text=raw)
    if not isinstance(raw, dict):
        raise ManifestError(f"{path}: query #{index} is neither text nor a mapping")
    text = raw.get("text", raw.get("query"))
    if not isinstance(text, str) or not text.strip():
        raise ManifestError(f"{path}: query #{index} has no 'text'")
    context_key = next((k for k in ("context", "product", "attachment") if raw.get(k)), None)
    context = raw.get(context_key, "") if context_key else ""
    if not isinstance(context, str):
        context = yaml.safe_dump(context, sort_keys=False, allow_unicode=True)
    return SeedQuery(
        id=str(raw.get("id", f"q{index}")),
        text=text.strip(),
        persona_hint=str(raw.get("persona_hint", raw.get("persona", "")) or ""),
        context=context,
        context_title="product label" if context_key == "product" else "attachment",
    )


def load_seed_queries(path: Path) -> list[SeedQuery]:
    """``queries:`` a list of text or ``{id, text, persona_hint?, product|context?}``."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read the seed queries: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise ManifestError(f"{path}: malformed YAML: {exc}") from exc
    entries = data.get("queries") if isinstance(data, dict) else data
    if not isinstance(entries, list) or not entries:
        raise ManifestError(f"{path}: expected 'queries:' with a non-empty list")
    return [_seed_entry(raw, i, path) for i, raw in enumerate(entries, start=1)]


DEFAULT_SEARCH_DIRS: tuple[Path, ...] = (Path("apps"), Path("examples"))


def find_manifest(app: str, search_dirs: Sequence[Path] = DEFAULT_SEARCH_DIRS) -> Path:
    """``<dir>/<app>/app.yaml`` in the first search folder that has one."""
    for folder in search_dirs:
        candidate = folder / app / "app.yaml"
        if candidate.is_file():
            return candidate
    searched = ", ".join(str(d / app / "app.yaml") for d in search_dirs)
    raise ManifestError(
        f"no manifest for app {app!r} (looked for {searched}); pass --manifest PATH"
    )
