"""What a verdict is worth: the local judges and their cascades, from stored scores, in seconds.

Reads only the score files bench.scoring writes (examples/nutrition/scores/
<model>.<prompt tag>.jsonl, one line per expert-labelled item, with each of
the N annotators' P(criterion met)), so anyone can rerun the statistics
without a model. It prints:

1. each judge alone (each model at N = 1, 2, 3): AUC of P(met) against the
   expert label, overall and per criterion polarity, accuracy at 0.5,
   seconds and tokens per item;
2. over REAG_BENCH_SPLITS random splits (default 20, seeded by
   REAG_BENCH_SEED, default 0) of the non-example items into calibration and
   evaluation halves, per α = 0.10…0.40 (δ = 0.1, min_accepted = 30, cascade
   mode), for several cascades and for each judge calibrated alone:
   coverage, selective agreement pooled over the splits with its exact
   interval (and its mean and spread across splits), tier mix, honest cost
   per 100 items charging every tier that ran (seconds, and USD-equivalents
   at the paper's tier prices) and cost per performance; each judge on the
   full set beside them;
3. goal P3 per α: whether the best cascade's honest CPP is at least 30 %
   below the best single judge's at equal or better selective agreement.

The tables also go to REAG_BENCH_OUT (default bench/out) as verdicts.md and
verdicts.csv. Why N = 1 and 2 need no scoring of their own: annotator j's
prompt (its pinned examples) is the same whatever N, so a judge of N
annotators sees exactly the first N entries of a stored N = 3 line. Items
that serve as an annotator's example are kept out of both halves: the
judges saw their labels. A model whose file is missing is skipped, with its
cascades; files still being written are used on the items they have.
REAG_BENCH_SCORES_DIR reads another folder.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from reag.calibration import (
    ABSTAIN,
    DEFAULT_MIN_ACCEPTED,
    ScoreTable,
    calibrate_table,
    clopper_pearson_interval,
    route_table,
)
from reag.calibration.cost import honest_cost
from reag.calibration.sweep import Agreement
from reag.llm.base import Usage
from reag.llm.prices import PriceTable

HERE = Path(__file__).resolve().parent
SCORES = HERE.parent / "examples" / "nutrition" / "scores"  # the app's calibration_scores
OUT = HERE / "out"
ALPHAS = tuple(round(0.10 + 0.05 * i, 2) for i in range(7))
DELTA = 0.1
SPLITS = 20
P3_SAVING = 0.30
CI = 0.95

SMOL = "local:smollm2-135m-instruct"
Q05 = "local:qwen2.5-coder-0.5b-instruct"
Q15 = "local:qwen2.5-coder-1.5b-instruct"
SHORT = {SMOL: "SmolLM2-135M", Q05: "Qwen-0.5B", Q15: "Qwen-1.5B"}
OUTPUT_TOKENS_PER_CALL = 1
"""A hosted judge would generate the label: one output token per annotator call."""


@dataclass(frozen=True)
class Judge:
    """One model with its first ``n`` annotators."""

    model: str
    n: int

    @property
    def name(self) -> str:
        return f"{SHORT.get(self.model, self.model.removeprefix('local:'))} N{self.n}"


def _chain(*judges: tuple[str, int]) -> tuple[Judge, ...]:
    return tuple(Judge(model, n) for model, n in judges)


CASCADES: tuple[tuple[Judge, ...], ...] = (
    _chain((Q05, 1), (Q15, 1)),
    _chain((SMOL, 1), (Q15, 1)),
    _chain((SMOL, 1), (Q05, 1), (Q15, 1)),
    _chain((Q15, 1), (Q15, 3)),
    _chain((Q05, 1), (Q15, 1), (Q15, 3)),
    _chain((Q05, 1), (Q15, 3)),
    _chain((SMOL, 1), (Q15, 3)),
    _chain((Q05, 3), (Q15, 3)),
    _chain((SMOL, 3), (Q05, 3), (Q15, 3)),
)
SINGLES: tuple[Judge, ...] = tuple(Judge(m, n) for m in (Q15, Q05, SMOL) for n in (1, 2, 3))


def system_name(judges: Sequence[Judge]) -> str:
    return " → ".join(j.name for j in judges)


# ---------------------------------------------------------------- stored scores


@dataclass(frozen=True)
class ModelScores:
    """One model's stored lines, as arrays over its items (sorted by id)."""

    model: str
    path: Path
    prompt_version: str
    weights_sha256: str
    item_ids: tuple[str, ...]
    label_yes: NDArray[np.bool_]
    pass_polarity: NDArray[np.bool_]
    annotator_yes: NDArray[np.float64]  # items × N stored
    example: NDArray[np.bool_]
    seconds: NDArray[np.float64]
    prompt_tokens: NDArray[np.float64]
    cached_tokens: NDArray[np.float64]
    calls: NDArray[np.float64]
    stored_confidence: NDArray[np.float64]
    stored_verdict_yes: NDArray[np.bool_]

    @property
    def n_stored(self) -> int:
        return int(self.annotator_yes.shape[1])

    def rows(self, item_ids: Sequence[str]) -> NDArray[np.int64]:
        index = {item: i for i, item in enumerate(self.item_ids)}
        return np.array([index[i] for i in item_ids], dtype=np.int64)


def _parse_lines(path: Path, notes: list[str]) -> list[dict[str, Any]]:
    """JSON lines; a broken last line is a write in progress, any other is an error."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    parsed: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines):
                notes.append(f"{path.name}: last line is incomplete (still being written); skipped")
                break
            raise ValueError(f"{path}:{number}: not valid JSON ({exc.msg})") from exc
        if not isinstance(value, dict):
            raise ValueError(f"{path}:{number}: expected a JSON object")
        parsed.append(value)
    return parsed


def load_model(path: Path, notes: list[str]) -> ModelScores | None:
    """A model's file as arrays; None (with a note) when it has no usable line."""
    lines = _parse_lines(path, notes)
    if not lines:
        notes.append(f"{path.name}: no scored items yet")
        return None
    lines.sort(key=lambda line: str(line["item_id"]))
    try:
        sizes = {len(line["annotator_yes"]) for line in lines}
        if len(sizes) != 1:
            raise ValueError(f"{path}: lines carry different numbers of annotators {sorted(sizes)}")
        versions = {str(line["prompt_version"]) for line in lines}
        if len(versions) != 1:
            raise ValueError(f"{path}: lines from several prompt versions {sorted(versions)}")

        def col(key: str) -> NDArray[np.float64]:
            return np.array([float(line[key]) for line in lines], dtype=np.float64)

        return ModelScores(
            model=str(lines[0]["model"]),
            path=path,
            prompt_version=versions.pop(),
            weights_sha256=str(lines[0].get("weights_sha256", "")),
            item_ids=tuple(str(line["item_id"]) for line in lines),
            label_yes=np.array([line["label"] == "YES" for line in lines], dtype=np.bool_),
            pass_polarity=np.array([line["polarity"] == "pass" for line in lines], dtype=np.bool_),
            annotator_yes=np.array([line["annotator_yes"] for line in lines], dtype=np.float64),
            example=np.array([bool(line["example"]) for line in lines], dtype=np.bool_),
            seconds=col("seconds"),
            prompt_tokens=col("prompt_tokens"),
            cached_tokens=col("cached_tokens"),
            calls=col("n_calls"),
            stored_confidence=col("confidence"),
            stored_verdict_yes=np.array([line["verdict"] == "YES" for line in lines]),
        )
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{path}: a line lacks or mistypes a field ({exc})") from exc


def find_files(folder: Path, model: str) -> list[Path]:
    return sorted(folder.glob(f"{model.removeprefix('local:')}.*.jsonl"))


def load_all(folder: Path, models: Sequence[str], notes: list[str]) -> dict[str, ModelScores]:
    """Every model that has a score file; a model with several uses the one of most annotators
    (a smaller N's file is cut from it, bench.scoring), then of most items."""
    found: dict[str, ModelScores] = {}
    for model in models:
        paths = find_files(folder, model)
        if not paths:
            notes.append(f"{model}: no score file in {folder}; its judges are skipped")
            continue
        loaded = [s for s in (load_model(p, notes) for p in paths) if s is not None]
        if not loaded:
            continue
        best = max(loaded, key=lambda s: (s.n_stored, len(s.item_ids)))
        if len(loaded) > 1:
            others = ", ".join(s.path.name for s in loaded if s is not best)
            notes.append(f"{model}: using {best.path.name}, of most annotators; not {others}")
        found[model] = best
    return found


# ---------------------------------------------------------------- one judge


def derive(
    annotator_yes: NDArray[np.float64], n: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """(P(met), confidence, verdict YES) of the judge made of the first ``n`` annotators.

    The paper's eq. 4: the annotators' distributions are averaged first, the
    confidence is the larger mean probability and the verdict its label; a
    tie is a NO, as in the judge.
    """
    if not 1 <= n <= annotator_yes.shape[1]:
        raise ValueError(f"n must be within 1..{annotator_yes.shape[1]}, got {n}")
    mean = annotator_yes[:, :n].mean(axis=1)
    return mean, np.maximum(mean, 1.0 - mean), mean > 0.5


@dataclass(frozen=True)
class JudgeView:
    """A judge on a list of items: what calibration needs, and what each item cost it."""

    judge: Judge
    item_ids: tuple[str, ...]
    label_yes: NDArray[np.bool_]
    pass_polarity: NDArray[np.bool_]
    p_met: NDArray[np.float64]
    confidence: NDArray[np.float64]
    verdict_yes: NDArray[np.bool_]
    seconds: NDArray[np.float64]
    prompt_tokens: NDArray[np.float64]
    evaluated_tokens: NDArray[np.float64]
    usd: NDArray[np.float64]


def view(scores: ModelScores, n: int, item_ids: Sequence[str], prices: PriceTable) -> JudgeView:
    """The first ``n`` annotators on ``item_ids``; seconds and tokens scaled by n / N stored.

    The scaling is an approximation: annotator prompts differ in length, and
    the first annotator of an item also pays for warming the KV cache.
    """
    rows = scores.rows(item_ids)
    p_met, confidence, verdict = derive(scores.annotator_yes[rows], n)
    share = n / scores.n_stored
    price = prices.lookup(prices.equivalent(scores.model))
    usd_full = np.array(
        [
            price.cost(
                Usage(
                    prompt_tokens=int(p),
                    completion_tokens=int(c) * OUTPUT_TOKENS_PER_CALL,
                    cached_tokens=int(k),
                )
            )
            for p, c, k in zip(
                scores.prompt_tokens[rows], scores.calls[rows], scores.cached_tokens[rows],
                strict=True,
            )
        ],
        dtype=np.float64,
    )  # fmt: skip
    return JudgeView(
        judge=Judge(scores.model, n),
        item_ids=tuple(item_ids),
        label_yes=scores.label_yes[rows],
        pass_polarity=scores.pass_polarity[rows],
        p_met=p_met,
        confidence=confidence,
        verdict_yes=verdict,
        seconds=scores.seconds[rows] * share,
        prompt_tokens=scores.prompt_tokens[rows] * share,
        evaluated_tokens=(scores.prompt_tokens[rows] - scores.cached_tokens[rows]) * share,
        usd=usd_full * share,
    )


def auc(score: NDArray[np.float64], positive: NDArray[np.bool_]) -> float | None:
    """Mann–Whitney AUC (ties count half); None without both classes."""
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if n_pos == 0 or n_neg == 0:
        return None
    ranks = stats.rankdata(score)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


# ---------------------------------------------------------------- items and splits


def usable_items(models: Sequence[ModelScores]) -> tuple[tuple[str, ...], int]:
    """Items every model scored, minus any annotator example; and how many examples were left out.

    An item is an example if any file marks it so (the pins are shared, so
    they agree; the union is the safe side).
    """
    common = set.intersection(*(set(m.item_ids) for m in models))
    examples = {
        item for m in models for item, ex in zip(m.item_ids, m.example.tolist(), strict=True) if ex
    }
    return tuple(sorted(common - examples)), len(common & examples)


def split_masks(
    item_ids: Sequence[str], universe: Sequence[str], n_splits: int, seed: int
) -> list[NDArray[np.bool_]]:
    """Calibration masks over ``item_ids``, one per split; the rest is the evaluation half.

    Split s ranks the whole ``universe`` at random (seed + s) and puts the
    lower-ranked half of ``item_ids`` in calibration, so systems scored on
    different item sets still split a shared item alike as far as they can.
    """
    position = {item: i for i, item in enumerate(universe)}
    index = np.array([position[i] for i in item_ids], dtype=np.int64)
    masks = []
    for s in range(n_splits):
        rank = np.random.default_rng(seed + s).permutation(len(universe))[index]
        mask = np.zeros(len(item_ids), dtype=np.bool_)
        mask[np.argsort(rank, kind="stable")[: len(item_ids) // 2]] = True
        masks.append(mask)
    return masks


# ---------------------------------------------------------------- a system over the splits


@dataclass(frozen=True)
class System:
    """A cascade (or one judge calibrated alone) on the items its models share."""

    judges: tuple[Judge, ...]
    views: tuple[JudgeView, ...]

    @property
    def name(self) -> str:
        return system_name(self.judges)

    @property
    def n_items(self) -> int:
        return len(self.views[0].item_ids)

    def table(self) -> ScoreTable:
        """The views as reag's score table (tier t = judges[t]), for calibrate/route."""
        first = self.views[0]
        return ScoreTable(
            item_ids=first.item_ids,
            labels_yes=first.label_yes,
            confidence=np.column_stack([v.confidence for v in self.views]),
            verdict_yes=np.column_stack([v.verdict_yes for v in self.views]),
            present=np.ones((self.n_items, len(self.views)), dtype=np.bool_),
            cost_usd=np.column_stack([v.usd for v in self.views]),
            persona_categories=(None,) * self.n_items,
        )

    def costs(self, what: str) -> NDArray[np.float64]:
        """(items × tiers) cost of each tier's call on each item: seconds, usd or tokens."""
        return np.column_stack([getattr(v, what) for v in self.views])


@dataclass(frozen=True)
class SplitResult:
    """One α on one split's evaluation half."""

    decided: NDArray[np.int64]  # tier that decided each evaluation item, ABSTAIN = 0
    agreed: int
    seconds: float
    usd: float
    tokens: float
    thresholds: tuple[float | None, ...]


def run_split(
    system: System, table: ScoreTable, cal_mask: NDArray[np.bool_], alpha: float
) -> SplitResult:
    """Calibrate on the calibration half with reag's own code, route and charge the other half.

    This is run_sweep's cascade step (calibrate_table, route_table,
    honest_cost); it is called directly because the bench needs three costs
    per item (seconds, USD-equivalent, tokens) and the raw counts to pool
    over splits, where run_sweep takes one cost and reports one split.
    """
    fitted = calibrate_table(
        table.subset(cal_mask),
        alpha=alpha,
        delta=DELTA,
        mode="cascade",
        min_accepted=DEFAULT_MIN_ACCEPTED,
    )
    evaluation = table.subset(~cal_mask)
    decided = route_table(fitted, evaluation)
    accepted = np.flatnonzero(decided != ABSTAIN)
    agreed = int((~evaluation.wrong[accepted, decided[accepted] - 1]).sum())
    eval_rows = np.flatnonzero(~cal_mask)
    return SplitResult(
        decided=decided,
        agreed=agreed,
        seconds=honest_cost(decided, system.costs("seconds")[eval_rows]),
        usd=honest_cost(decided, system.costs("usd")[eval_rows]),
        tokens=honest_cost(decided, system.costs("evaluated_tokens")[eval_rows]),
        thresholds=tuple(f.threshold for f in fitted.tiers),
    )


@dataclass
class Pooled:
    """One system at one α, summed over the splits' evaluation halves."""

    system: str
    n_tiers: int
    alpha: float
    n_items: int
    evaluated: int = 0
    accepted: int = 0
    agreed: int = 0
    per_tier: list[int] = field(default_factory=list)
    abstained: int = 0
    seconds: float = 0.0
    usd: float = 0.0
    tokens: float = 0.0
    split_rates: list[float] = field(default_factory=list)
    splits: int = 0

    def add(self, result: SplitResult) -> None:
        counts = np.bincount(result.decided, minlength=self.n_tiers + 1)
        if not self.per_tier:
            self.per_tier = [0] * self.n_tiers
        self.per_tier = [a + int(b) for a, b in zip(self.per_tier, counts[1:], strict=True)]
        self.abstained += int(counts[0])
        n_acc = int(result.decided.size - counts[0])
        self.evaluated += int(result.decided.size)
        self.accepted += n_acc
        self.agreed += result.agreed
        self.seconds += result.seconds
        self.usd += result.usd
        self.tokens += result.tokens
        self.splits += 1
        if n_acc:
            self.split_rates.append(result.agreed / n_acc)

    @property
    def agreement(self) -> Agreement:
        return Agreement(n=self.accepted, agree=self.agreed)

    @property
    def coverage(self) -> float:
        return self.accepted / self.evaluated if self.evaluated else 0.0

    def per_100(self, total: float) -> float:
        return 100.0 * total / self.evaluated if self.evaluated else 0.0


def cpp(cost_per_100: float, agreement: Agreement) -> float | None:
    """Cost per performance: cost per 100 items over agreement in percent."""
    rate = agreement.rate
    return cost_per_100 / (100.0 * rate) if rate else None


def build_system(
    judges: Sequence[Judge], scores: dict[str, ModelScores], prices: PriceTable
) -> System | None:
    """The system on the usable items of its models; None when a model has no scores."""
    models = [scores[j.model] for j in judges if j.model in scores]
    if len(models) < len(judges) or any(j.n > scores[j.model].n_stored for j in judges):
        return None  # a model not scored, or not with that many annotators
    items, _ = usable_items(models)
    views = tuple(view(scores[j.model], j.n, items, prices) for j in judges)
    for v in views[1:]:
        if not np.array_equal(v.label_yes, views[0].label_yes):
            differ = [items[k] for k in np.flatnonzero(v.label_yes != views[0].label_yes)]
            raise ValueError(
                f"{v.judge.model} and {views[0].judge.model} disagree on the expert label of "
                f"{len(differ)} item(s), e.g. {differ[0]!r}: their score files are from "
                "different labelled sets"
            )
    return System(judges=tuple(judges), views=views)


def sweep(
    system: System, universe: Sequence[str], n_splits: int, seed: int, alphas: Sequence[float]
) -> list[Pooled]:
    """Every α over every split, pooled."""
    table = system.table()
    pooled = [Pooled(system.name, len(system.judges), a, system.n_items) for a in alphas]
    for mask in split_masks(table.item_ids, universe, n_splits, seed):
        for row in pooled:
            row.add(run_split(system, table, mask, row.alpha))
    return pooled


# ---------------------------------------------------------------- formatting


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100.0 * value:.1f}%"


def _num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _interval(agreement: Agreement) -> str:
    if agreement.rate is None:
        return "– (0 accepted)"
    low, high = clopper_pearson_interval(agreement.agree, agreement.n, CI)
    return f"{_pct(agreement.rate)} [{_pct(low)}, {_pct(high)}] ({agreement.n})"


@dataclass
class Report:
    """Everything printed, as Markdown lines and CSV rows."""

    lines: list[str]
    rows: list[dict[str, str]]


CSV_COLUMNS = (
    "table", "system", "alpha", "n_items", "splits", "coverage", "agreement", "ci_low",
    "ci_high", "accepted", "split_mean", "split_sd", "tier_pct", "abstain_pct",
    "seconds_per_100", "usd_per_100", "tokens_per_100", "cpp_seconds", "cpp_usd",
    "auc", "auc_pass", "auc_fail", "accuracy", "seconds_per_item", "prompt_tokens_per_item",
    "evaluated_tokens_per_item", "p3_ratio",
)  # fmt: skip


def judge_section(views: Sequence[JudgeView], report: Report) -> None:
    report.lines += [
        "## Each judge alone, every usable item",
        "",
        "| judge | n | AUC | AUC pass (n) | AUC fail (n) | accuracy @0.5 | s / item "
        "| prompt tokens / item | evaluated tokens / item |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for v in views:
        overall = auc(v.p_met, v.label_yes)
        by_polarity = [
            (auc(v.p_met[m], v.label_yes[m]), int(m.sum()))
            for m in (v.pass_polarity, ~v.pass_polarity)
        ]
        accuracy = float((v.verdict_yes == v.label_yes).mean()) if v.item_ids else None
        cells = [_num(a, 3) + f" ({n})" for a, n in by_polarity]
        report.lines.append(
            f"| {v.judge.name} | {len(v.item_ids)} | {_num(overall, 3)} | {cells[0]} "
            f"| {cells[1]} | {_pct(accuracy)} | {v.seconds.mean():.2f} "
            f"| {v.prompt_tokens.mean():.0f} | {v.evaluated_tokens.mean():.0f} |"
        )
        report.rows.append({
            "table": "judge", "system": v.judge.name, "n_items": str(len(v.item_ids)),
            "auc": _num(overall, 4), "auc_pass": _num(by_polarity[0][0], 4),
            "auc_fail": _num(by_polarity[1][0], 4), "accuracy": _num(accuracy, 4),
            "seconds_per_item": _num(float(v.seconds.mean()), 3),
            "prompt_tokens_per_item": _num(float(v.prompt_tokens.mean()), 1),
            "evaluated_tokens_per_item": _num(float(v.evaluated_tokens.mean()), 1),
        })  # fmt: skip


@dataclass(frozen=True)
class FullSet:
    """A judge deciding every usable item: no calibration, no abstention."""

    name: str
    agreement: Agreement
    seconds_per_100: float
    usd_per_100: float


def full_set(v: JudgeView) -> FullSet:
    n = len(v.item_ids)
    return FullSet(
        name=v.judge.name,
        agreement=Agreement.of(v.verdict_yes == v.label_yes),
        seconds_per_100=100.0 * float(v.seconds.sum()) / n,
        usd_per_100=100.0 * float(v.usd.sum()) / n,
    )


def full_set_section(rows: Sequence[FullSet], report: Report) -> None:
    report.lines += [
        "## Each judge alone, full set (every item judged, every verdict counted)",
        "",
        "| judge | agreement [95% CI] (n) | s / 100 items | USD-eq / 100 items "
        "| CPP (s) | CPP (USD-eq) |",
        "|---|---|---|---|---|---|",
    ]
    for f in rows:
        report.lines.append(
            f"| {f.name} | {_interval(f.agreement)} | {f.seconds_per_100:.0f} "
            f"| {f.usd_per_100:.4f} | {_num(cpp(f.seconds_per_100, f.agreement))} "
            f"| {_num(cpp(f.usd_per_100, f.agreement), 6)} |"
        )
        report.rows.append({
            "table": "judge_full_set", "system": f.name, "n_items": str(f.agreement.n),
            "coverage": "1.0000", "agreement": _num(f.agreement.rate, 4),
            "accepted": str(f.agreement.n), "seconds_per_100": _num(f.seconds_per_100, 3),
            "usd_per_100": _num(f.usd_per_100, 6),
            "cpp_seconds": _num(cpp(f.seconds_per_100, f.agreement), 4),
            "cpp_usd": _num(cpp(f.usd_per_100, f.agreement), 8),
        })  # fmt: skip


def _tier_mix(p: Pooled) -> str:
    shares = [100.0 * c / p.evaluated for c in (*p.per_tier, p.abstained)] if p.evaluated else []
    return " / ".join(f"{s:.0f}" for s in shares)


def alpha_section(alpha: float, pooled: Sequence[Pooled], report: Report) -> None:
    report.lines += [
        f"### α = {alpha:.2f}",
        "",
        "| system | items | coverage | selective agreement [95% CI] (accepted) "
        "| across splits: mean ± sd (splits) | tier mix % (… / abstain) | s / 100 items "
        "| USD-eq / 100 items | CPP (s) | CPP (USD-eq) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in pooled:
        agreement = p.agreement
        rates = np.array(p.split_rates)
        spread = (
            f"{_pct(float(rates.mean()))} ± {100 * float(rates.std(ddof=1)):.1f} ({rates.size})"
            if rates.size > 1
            else f"{_pct(float(rates.mean()) if rates.size else None)} ({rates.size})"
        )
        sec, usd = p.per_100(p.seconds), p.per_100(p.usd)
        report.lines.append(
            f"| {p.system} | {p.n_items} | {_pct(p.coverage)} | {_interval(agreement)} "
            f"| {spread} | {_tier_mix(p)} | {sec:.0f} | {usd:.4f} "
            f"| {_num(cpp(sec, agreement))} | {_num(cpp(usd, agreement), 6)} |"
        )
        low, high = clopper_pearson_interval(agreement.agree, agreement.n, CI)
        report.rows.append({
            "table": "cascade" if p.n_tiers > 1 else "judge_selective", "system": p.system,
            "alpha": f"{alpha:.2f}", "n_items": str(p.n_items), "splits": str(p.splits),
            "coverage": _num(p.coverage, 4), "agreement": _num(agreement.rate, 4),
            "ci_low": _num(low, 4), "ci_high": _num(high, 4), "accepted": str(agreement.n),
            "split_mean": _num(float(rates.mean()) if rates.size else None, 4),
            "split_sd": _num(float(rates.std(ddof=1)) if rates.size > 1 else None, 4),
            "tier_pct": _tier_mix(p),
            "abstain_pct": _num(100.0 * p.abstained / p.evaluated if p.evaluated else None, 1),
            "seconds_per_100": _num(sec, 3), "usd_per_100": _num(usd, 6),
            "tokens_per_100": _num(p.per_100(p.tokens), 1),
            "cpp_seconds": _num(cpp(sec, agreement), 4), "cpp_usd": _num(cpp(usd, agreement), 8),
        })  # fmt: skip
    report.lines.append("")


@dataclass(frozen=True)
class Candidate:
    """A row P3 compares: its name, CPP in seconds and agreement."""

    name: str
    cpp: float
    agreement: float
    n_items: int
    coverage: float


def _candidates(rows: Sequence[Pooled]) -> list[Candidate]:
    out = []
    for p in rows:
        value = cpp(p.per_100(p.seconds), p.agreement)
        if value is not None and p.agreement.rate is not None:
            out.append(Candidate(p.system, value, p.agreement.rate, p.n_items, p.coverage))
    return out


def _against(single: Candidate, cascades: Sequence[Candidate]) -> tuple[str, float | None]:
    """The cheapest cascade (CPP) at equal or better agreement than ``single``, and the ratio."""
    lead = (
        f"{single.name}: CPP {single.cpp:.2f} s at {_pct(single.agreement)}, coverage "
        f"{_pct(single.coverage)} ({single.n_items} items)"
    )
    able = [c for c in cascades if c.agreement >= single.agreement]
    if not able:
        return f"{lead}; no cascade reaches that agreement → P3 not met", None
    top = min(able, key=lambda c: c.cpp)
    ratio = top.cpp / single.cpp
    verdict = "P3 met" if ratio <= 1.0 - P3_SAVING else "P3 not met"
    return (
        f"{lead}; cheapest cascade at equal or better agreement: {top.name}, CPP {top.cpp:.2f} s "
        f"at {_pct(top.agreement)}, coverage {_pct(top.coverage)} ({top.n_items} items); "
        f"ratio {ratio:.2f} → {verdict}",
        ratio,
    )


def p3(
    alpha: float, cascades: Sequence[Pooled], singles: Sequence[Pooled], full: Sequence[FullSet]
) -> list[tuple[str, float | None]]:
    """Goal P3 at one α: lines, each with its ratio (cascade CPP / single judge CPP).

    "The best single judge" has two readings, and both are printed. The
    strongest: the single judge (alone under its own threshold at this α, or
    on the full set) with the highest agreement, as the paper's review
    compared with its strongest judge. The cheapest that meets the target:
    the lowest CPP among single judges whose agreement is at least 1 − α.
    Not the lowest CPP outright: CPP divides cost by agreement only once, so
    a cheap judge near chance has the lowest CPP of all and no one would
    deploy it. Against either, the cascade is the cheapest (CPP) whose pooled
    selective agreement is equal or better; P3 holds when the ratio is
    ≤ 1 − 30 %.
    """
    single = _candidates(singles) + [
        Candidate(f"{f.name} (full set)", c, f.agreement.rate or 0.0, f.agreement.n, 1.0)
        for f in full
        if (c := cpp(f.seconds_per_100, f.agreement)) is not None
    ]
    head = f"α={alpha:.2f}"
    if not single:
        return [(f"{head}: no single judge has a CPP; P3 not assessed", None)]
    if not cascades:
        return [(f"{head}: no cascade could run (scores missing); P3 not assessed", None)]
    routed = _candidates(cascades)
    if not routed:
        return [(f"{head}: no cascade accepted any item; P3 not met", None)]
    strongest = max(single, key=lambda c: (c.agreement, -c.cpp))
    line, ratio = _against(strongest, routed)
    out = [(f"{head}, strongest single {line}", ratio)]
    on_target = [c for c in single if c.agreement >= 1.0 - alpha]
    if not on_target:
        out.append((f"{head}: no single judge reaches {_pct(1.0 - alpha)} agreement", None))
    else:
        line, ratio = _against(min(on_target, key=lambda c: c.cpp), routed)
        out.append((f"{head}, cheapest single at ≥ 1−α {line}", ratio))
    return out


# ---------------------------------------------------------------- the report


def build_report(
    folder: Path, *, n_splits: int, seed: int, alphas: Sequence[float] = ALPHAS
) -> Report:
    """All the tables, from the score files in ``folder``."""
    notes: list[str] = []
    scores = load_all(folder, (SMOL, Q05, Q15), notes)
    prices = PriceTable.load()
    report = Report(lines=["# What a verdict is worth (bench.verdicts)", ""], rows=[])
    lines = report.lines
    lines.append(f"Score files in {folder}:")
    for s in scores.values():
        lines.append(
            f"- {s.model}: {len(s.item_ids)} items ({int(s.example.sum())} annotator examples), "
            f"N={s.n_stored}, {s.prompt_version}, weights {s.weights_sha256[:12]}…, {s.path.name}"
        )
        _, conf, verdict = derive(s.annotator_yes, s.n_stored)
        off = int(
            (np.abs(conf - s.stored_confidence) > 1e-6).sum()
            + (verdict != s.stored_verdict_yes).sum()
        )
        if off:
            notes.append(
                f"{s.model}: {off} stored confidences/verdicts differ from eq. 4 on the annotators"
            )
    if not scores:
        lines += ["", "No score files: run `python -m bench scoring` first.", *notes]
        return report
    few = f" (fewer than the {SPLITS} the issue asks for)" if n_splits < SPLITS else ""
    universe, n_examples = usable_items(list(scores.values()))
    all_items = sorted({i for s in scores.values() for i in s.item_ids})
    lines += [
        "",
        f"Items every present model scored, annotator examples left out: {len(universe)} "
        f"({n_examples} examples left out). A system whose models are all present uses the items "
        "its own models share (its `items` column); partial files give partial sets.",
        "N=1 and N=2 judges are the first 1 or 2 annotators of the stored N=3 line (annotator "
        "prompts do not depend on N). Their seconds and tokens are the N=3 figures × n/3: an "
        "approximation (annotator prompts differ in length; the first call warms the cache).",
        "Cost is honest: an item pays every tier that ran on it (an escalation from N1 to N3 of "
        "one model pays both, as production does). USD-equivalents price each model at one of "
        "the paper's tiers (relative cost 1 / 3.0 / 4.6 per call), by size: "
        + ", ".join(f"{SHORT[m]} = {prices.equivalent(m)}" for m in SHORT)
        + f" (reag/llm/prices.yaml, as of {prices.as_of}), on the prompt tokens the local run "
        "evaluated (input rate) and served from its KV cache (cached-input rate), plus one "
        "output token per annotator call.",
        f"Splits: {n_splits}{few} "
        f"(seed {seed}), half calibration, half evaluation; cascade mode, "
        f"δ={DELTA:g}, min_accepted={DEFAULT_MIN_ACCEPTED}, reag.calibration's calibrate_table "
        "and route_table. CPP = cost per 100 items / selective agreement in %. Intervals: exact "
        "95 % Clopper–Pearson on the pooled counts (pooled evaluation halves overlap across "
        "splits, so the interval is narrower than the data warrant; the spread across splits "
        "is the honest one).",
        "",
    ]
    judges = [j for j in SINGLES if j.model in scores and j.n <= scores[j.model].n_stored]
    views = []
    for j in judges:
        s = scores[j.model]
        items, _ = usable_items([s])
        views.append(view(s, j.n, items, prices))
    judge_section(views, report)
    full = [full_set(v) for v in views]
    lines.append("")
    full_set_section(full, report)
    lines += ["", f"## Cascades and each judge calibrated alone, over {n_splits} splits", ""]
    sweeps: dict[tuple[Judge, ...], list[Pooled]] = {}
    for chain in (*CASCADES, *((j,) for j in SINGLES)):
        system = build_system(chain, scores, prices)
        if system is None:
            missing = sorted({j.model for j in chain} - set(scores))
            why = (
                f"no scores for {', '.join(missing)}"
                if missing
                else "a model was scored with fewer annotators"
            )
            notes.append(f"{system_name(chain)}: skipped, {why}")
            continue
        if system.n_items < 2:
            notes.append(f"{system.name}: skipped, {system.n_items} usable item(s)")
            continue
        sweeps[chain] = sweep(system, all_items, n_splits, seed, alphas)
    p3_lines = []
    for k, alpha in enumerate(alphas):
        rows = [pooled[k] for pooled in sweeps.values()]
        alpha_section(alpha, rows, report)
        singles = [r for r in rows if r.n_tiers == 1]
        for line, ratio in p3(alpha, [r for r in rows if r.n_tiers > 1], singles, full):
            p3_lines.append(line)
            report.rows.append({"table": "p3", "alpha": f"{alpha:.2f}", "system": line,
                                "p3_ratio": _num(ratio, 4)})  # fmt: skip
    lines += [
        "## Goal P3: a cascade's honest CPP (seconds) ≥ 30 % below the best single judge's, "
        "at equal or better selective agreement",
        "",
        "Against two readings of the best single judge (alone under its own threshold at the "
        "same α, or on the full set): the strongest (highest agreement) and the cheapest (lowest "
        "CPP) among those whose agreement is at least 1 − α (the lowest CPP outright is a cheap "
        "judge near chance); the cascade is the cheapest (CPP) whose pooled selective agreement "
        "is equal or better. Ratio = cascade CPP / single judge CPP; P3 needs ≤ 0.70.",
        "",
        *(f"- {line}" for line in p3_lines),
    ]
    if notes:
        lines += ["", "Notes:", *(f"- {note}" for note in notes)]
    return report


def write(report: Report, out: Path) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    md, table = out / "verdicts.md", out / "verdicts.csv"
    md.write_text("\n".join(report.lines) + "\n", encoding="utf-8")
    with table.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        # "–" reads well in a table; a CSV reader wants an empty cell.
        writer.writerows({k: "" if v == "–" else v for k, v in row.items()} for row in report.rows)
    return md, table


def run() -> None:
    folder = Path(os.environ.get("REAG_BENCH_SCORES_DIR", str(SCORES)))
    n_splits = int(os.environ.get("REAG_BENCH_SPLITS", str(SPLITS)))
    seed = int(os.environ.get("REAG_BENCH_SEED", "0"))
    if n_splits < 1:
        raise SystemExit(f"REAG_BENCH_SPLITS must be ≥ 1, got {n_splits}")
    report = build_report(folder, n_splits=n_splits, seed=seed)
    print("\n".join(report.lines))
    md, table = write(report, Path(os.environ.get("REAG_BENCH_OUT", str(OUT))))
    print(f"\nwrote {md} and {table}")


if __name__ == "__main__":
    run()
