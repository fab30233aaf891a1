"""Judge scores on labelled items: the input of every calibration statistic.

One ``ScoreRecord`` is one tier's verdict and confidence on one expert-labelled
item. Records travel as JSONL (one per line) between the judges, the CLI and
the benchmark; the statistics work on a ``ScoreTable``, the same records
pivoted into per-item, per-tier arrays so that nothing loops over items.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reag.calibration.errors import CalibrationError, ScoreFileError

Label = Literal["YES", "NO"]


class ScoreRecord(BaseModel):
    """One tier's judgement of one labelled item, as a line of a scores file."""

    # Judges may log more than the statistics need (model name, latency); ignore it.
    model_config = ConfigDict(frozen=True, extra="ignore")

    item_id: str = Field(min_length=1)
    tier: int = Field(ge=1, description="1-based position of the judge in the cascade.")
    verdict: Label
    confidence: float = Field(ge=0.0, le=1.0)
    label: Label = Field(description="The expert's verdict on the item.")
    persona_category: str | None = None
    cost_usd: float | None = Field(
        default=None, ge=0.0, description="What this tier spent on this item, when known."
    )


def read_scores(path: Path) -> list[ScoreRecord]:
    """Read a scores JSONL file; blank lines are skipped, any bad line is an error."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScoreFileError(f"cannot read scores file {path}: {exc.strerror}") from exc
    records: list[ScoreRecord] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ScoreFileError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from exc
        if not isinstance(raw, dict):
            raise ScoreFileError(f"{path}:{lineno}: expected a JSON object, got {raw!r:.60}")
        try:
            records.append(ScoreRecord.model_validate(raw))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'record'}: {err['msg']}"
                for err in exc.errors()
            )
            raise ScoreFileError(f"{path}:{lineno}: {problems}") from exc
    if not records:
        raise ScoreFileError(f"{path}: no score records in the file")
    return records


def write_scores(path: Path, records: Iterable[ScoreRecord]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(record.model_dump_json(exclude_none=True) + "\n")


def calibration_hash(item_ids: Sequence[str], labels_yes: NDArray[np.bool_]) -> str:
    """sha256 over the sorted (item id, label) pairs, naming the set a threshold was fit on."""
    digest = hashlib.sha256()
    for item_id, yes in sorted(zip(item_ids, labels_yes.tolist(), strict=True)):
        digest.update(f"{item_id}\t{'YES' if yes else 'NO'}\n".encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class ScoreTable:
    """Scores pivoted to arrays: row i is ``item_ids[i]``, column t is tier t+1.

    Cells without a record hold NaN confidence and ``present`` False; cost is
    NaN where the record did not say what the call cost.
    """

    item_ids: tuple[str, ...]
    labels_yes: NDArray[np.bool_]
    confidence: NDArray[np.float64]
    verdict_yes: NDArray[np.bool_]
    present: NDArray[np.bool_]
    cost_usd: NDArray[np.float64]
    persona_categories: tuple[str | None, ...]

    @classmethod
    def from_arrays(
        cls,
        confidence: NDArray[np.float64],
        wrong: NDArray[np.bool_],
        *,
        labels_yes: NDArray[np.bool_] | None = None,
        item_ids: Sequence[str] | None = None,
    ) -> ScoreTable:
        """Build a table from (items × tiers) arrays; synthetic data and benchmarks use this.

        Only disagreement matters to the statistics, so verdicts are derived
        from ``wrong`` and the labels (all YES unless given).
        """
        confidence = np.asarray(confidence, dtype=np.float64)
        if confidence.ndim != 2:
            raise CalibrationError("confidence must be a 2-D array (items × tiers)")
        n_items, n_tiers = confidence.shape
        labels = (
            np.ones(n_items, dtype=np.bool_)
            if labels_yes is None
            else np.asarray(labels_yes, dtype=np.bool_)
        )
        wrong_arr = np.asarray(wrong, dtype=np.bool_)
        ids = tuple(item_ids) if item_ids is not None else tuple(f"i{i}" for i in range(n_items))
        return cls(
            item_ids=ids,
            labels_yes=labels,
            confidence=confidence,
            verdict_yes=labels[:, None] ^ wrong_arr,
            present=~np.isnan(confidence),
            cost_usd=np.full((n_items, n_tiers), np.nan),
            persona_categories=(None,) * n_items,
        )

    @property
    def n_items(self) -> int:
        return len(self.item_ids)

    @property
    def n_tiers(self) -> int:
        return int(self.confidence.shape[1])

    @property
    def wrong(self) -> NDArray[np.bool_]:
        """Where a tier's verdict disagrees with the expert (False where absent)."""
        wrong: NDArray[np.bool_] = (self.verdict_yes != self.labels_yes[:, None]) & self.present
        return wrong

    def calibration_hash(self) -> str:
        return calibration_hash(self.item_ids, self.labels_yes)

    def subset(self, mask: NDArray[np.bool_]) -> ScoreTable:
        """The items where ``mask`` is True, in the same order."""
        index = np.flatnonzero(mask)
        return ScoreTable(
            item_ids=tuple(self.item_ids[i] for i in index),
            labels_yes=self.labels_yes[index],
            confidence=self.confidence[index],
            verdict_yes=self.verdict_yes[index],
            present=self.present[index],
            cost_usd=self.cost_usd[index],
            persona_categories=tuple(self.persona_categories[i] for i in index),
        )

    def split(self, fraction: float, seed: int) -> tuple[ScoreTable, ScoreTable]:
        """Split items (all tiers of an item together) into calibration and evaluation sets."""
        if not 0.0 < fraction < 1.0:
            raise CalibrationError(f"split fraction must be in (0, 1), got {fraction}")
        order = np.random.default_rng(seed).permutation(self.n_items)
        n_cal = round(fraction * self.n_items)
        if n_cal in (0, self.n_items):
            raise CalibrationError(
                f"splitting {self.n_items} items at {fraction} leaves one side empty; "
                "use more items or a fraction nearer 0.5"
            )
        cal = np.zeros(self.n_items, dtype=np.bool_)
        cal[order[:n_cal]] = True
        return self.subset(cal), self.subset(~cal)


def pivot(records: Sequence[ScoreRecord], *, n_tiers: int | None = None) -> ScoreTable:
    """Pivot records into a ``ScoreTable`` (items sorted by id, tiers 1..n_tiers).

    Raises when an (item, tier) pair appears twice or an item carries two
    different expert labels, since either would silently bias the statistics.
    """
    if not records:
        raise CalibrationError("no score records to calibrate on")
    max_tier = max(r.tier for r in records)
    tiers = n_tiers if n_tiers is not None else max_tier
    if max_tier > tiers:
        raise CalibrationError(f"a record has tier {max_tier} but the cascade has {tiers} tiers")
    item_ids = sorted({r.item_id for r in records})
    row = {item_id: i for i, item_id in enumerate(item_ids)}
    n = len(item_ids)
    labels: list[str | None] = [None] * n
    personas: list[str | None] = [None] * n
    confidence = np.full((n, tiers), np.nan)
    verdict_yes = np.zeros((n, tiers), dtype=np.bool_)
    present = np.zeros((n, tiers), dtype=np.bool_)
    cost = np.full((n, tiers), np.nan)
    for record in records:
        i, t = row[record.item_id], record.tier - 1
        if present[i, t]:
            raise CalibrationError(
                f"item {record.item_id!r} has two records for tier {record.tier}; keep one"
            )
        if labels[i] is not None and labels[i] != record.label:
            raise CalibrationError(
                f"item {record.item_id!r} has conflicting expert labels "
                f"({labels[i]} and {record.label}); fix the labels before calibrating"
            )
        labels[i] = record.label
        personas[i] = personas[i] or record.persona_category
        present[i, t] = True
        confidence[i, t] = record.confidence
        verdict_yes[i, t] = record.verdict == "YES"
        if record.cost_usd is not None:
            cost[i, t] = record.cost_usd
    return ScoreTable(
        item_ids=tuple(item_ids),
        labels_yes=np.array([label == "YES" for label in labels], dtype=np.bool_),
        confidence=confidence,
        verdict_yes=verdict_yes,
        present=present,
        cost_usd=cost,
        persona_categories=tuple(personas),
    )
