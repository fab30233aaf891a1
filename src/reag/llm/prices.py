"""The price table: what a call cost, from the tokens it used.

Prices live in ``prices.yaml`` next to this module (dated, USD per million
tokens) so a cost figure can always be traced to a dated table. Settings can
point at a second file whose entries win. A model with no price is refused
up front rather than charged 0 USD: an unpriced call would make every cost
figure of reag (per tier, per criterion, the α sweep) quietly wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml

from reag.llm.base import ConfigurationError, Usage

_PER_TOKEN = 1e-6
_DATED_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """USD per million tokens."""

    input: float
    cached_input: float
    output: float

    def cost(self, usage: Usage) -> float:
        """Cached prompt tokens are part of ``prompt_tokens`` and billed at their own rate."""
        cached = min(usage.cached_tokens, usage.prompt_tokens)
        uncached = usage.prompt_tokens - cached
        return _PER_TOKEN * (
            uncached * self.input
            + cached * self.cached_input
            + usage.completion_tokens * self.output
        )


@dataclass(frozen=True, slots=True)
class PriceTable:
    as_of: str
    models: dict[str, ModelPrice]
    # local model -> the hosted model whose price its tokens are shown at (never charged)
    equivalents: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, override: Path | None = None) -> PriceTable:
        """The built-in table, with ``override``'s entries (and date) on top."""
        builtin = files("reag.llm").joinpath("prices.yaml").read_text(encoding="utf-8")
        table = cls._parse(yaml.safe_load(builtin), "reag/llm/prices.yaml")
        if override is None:
            return table
        try:
            text = override.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigurationError(
                f"cannot read the price file {override} (REAG_LLM_PRICES_FILE): {exc}"
            ) from exc
        extra = cls._parse(yaml.safe_load(text), str(override))
        return PriceTable(
            as_of=f"{table.as_of}; {override.name}: {extra.as_of}",
            models={**table.models, **extra.models},
            equivalents={**table.equivalents, **extra.equivalents},
        )

    @staticmethod
    def _parse(data: Any, source: str) -> PriceTable:
        if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
            raise ConfigurationError(f"{source}: expected a mapping with a 'models' mapping")
        models: dict[str, ModelPrice] = {}
        for name, entry in data["models"].items():
            try:
                models[str(name)] = ModelPrice(
                    input=float(entry["input"]),
                    cached_input=float(entry.get("cached_input", entry["input"])),
                    output=float(entry["output"]),
                )
            except (KeyError, TypeError, ValueError) as exc:
                raise ConfigurationError(
                    f"{source}: entry {name!r} needs numeric 'input' and 'output' "
                    f"(and optionally 'cached_input') USD per million tokens"
                ) from exc
        equivalents = data.get("equivalents") or {}
        if not isinstance(equivalents, dict):
            raise ConfigurationError(f"{source}: 'equivalents' maps a local model to a model")
        for local, hosted in equivalents.items():
            if str(hosted) not in models:
                raise ConfigurationError(
                    f"{source}: the equivalent of {local!r}, {hosted!r}, has no price entry"
                )
        return PriceTable(
            as_of=str(data.get("as_of", "undated")),
            models=models,
            equivalents={str(k): str(v) for k, v in equivalents.items()},
        )

    def lookup(self, model: str) -> ModelPrice:
        for candidate in (model, _DATED_SUFFIX.sub("", model)):
            if candidate in self.models:
                return self.models[candidate]
            patterns = [p for p in self.models if "*" in p and fnmatchcase(candidate, p)]
            if patterns:
                return self.models[max(patterns, key=len)]
        raise ConfigurationError(
            f"no price for {model!r} in the price table (as of {self.as_of}). Add it to a YAML "
            f'file named by REAG_LLM_PRICES_FILE, e.g. models: {{"{model}": '
            f"{{input: 0.4, cached_input: 0.1, output: 1.6}}}} (USD per million tokens; "
            f"0 for a self-hosted server)."
        )

    def cost(self, model: str, usage: Usage) -> float:
        return self.lookup(model).cost(usage)

    def equivalent(self, model: str) -> str:
        """The model whose price ``model``'s tokens are shown at: its equivalent, else itself."""
        return self.equivalents.get(model, model)

    def equivalent_cost(self, model: str, usage: Usage) -> float:
        """What ``usage`` would cost on ``model``'s hosted equivalent (shown, never charged)."""
        return self.cost(self.equivalent(model), usage)
