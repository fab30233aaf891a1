"""`reag calibrate --scores FILE ... --json` against an independent reference implementation.

The reference below is written from docs/calibration.md alone and shares no
code with reag.calibration: a plain loop over the candidates 0.999, 0.998, …,
0.500, the exact Clopper–Pearson bound from scipy's beta quantile, candidates
accepting fewer than M calibration items passed over, the sequence stopped at
the first tested candidate that fails, and (as the CLI's default τ = 5 does)
selective temperature scaling for a tier that would accept fewer than τ
items. Cascade routing is a loop over items too. The score files come from
conftest.py's judges whose confidences never saturate (all in [0.5, 0.92],
like small local models), where the default M = 30 is what makes a threshold
possible at all, and from its saturating judges.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pytest
import typer
from numpy.typing import NDArray
from scipy.stats import beta
from typer.testing import CliRunner

from reag.calibration import ScoreRecord, write_scores
from shell.cli.calibrate import register

Draw = Callable[
    [np.random.Generator, int], tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.float64]]
]
CANDIDATES = [round(0.999 - i / 1000, 3) for i in range(500)]  # 0.999 … 0.5, as JSON reads them
TEMPERATURES = (1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0)
N_ITEMS = 600


@dataclass(frozen=True)
class RefFit:
    threshold: float | None
    n: int
    n_accepted: int
    n_disagree: int
    upper: float | None
    temperature: float


@cache
def _upper(k: int, n: int, delta: float) -> float:
    """Exact one-sided (1−δ) Clopper–Pearson upper bound: Beta(k+1, n−k) quantile, 1 if k = n."""
    return 1.0 if k == n else float(beta.ppf(1.0 - delta, k + 1, n - k))


def _scaled(c: float, temperature: float) -> float:
    if temperature == 1.0:
        return c
    c = min(max(c, 1e-9), 1.0 - 1e-9)
    return 1.0 / (1.0 + math.exp(-(math.log(c) - math.log1p(-c)) / temperature))


def _fixed_sequence(
    scored: list[tuple[float, bool]], alpha: float, delta: float, min_accepted: int, t: float
) -> RefFit:
    """Candidates from the top; a pointer into the items sorted by (scaled) confidence counts
    n(λ) and k(λ) as λ falls."""
    ranked = sorted(((_scaled(c, t), wrong) for c, wrong in scored), reverse=True)
    best = RefFit(None, len(scored), 0, 0, None, t)
    n = k = 0
    for lam in CANDIDATES:
        while n < len(ranked) and ranked[n][0] >= lam:
            k += ranked[n][1]
            n += 1
        if n < min_accepted or n == 0:
            continue  # passed over: not tested, not a failure
        upper = _upper(k, n, delta)
        if upper > alpha:
            break
        best = RefFit(lam, len(scored), n, k, upper, t)
    return best


def _tier(
    scored: list[tuple[float, bool]], alpha: float, delta: float, min_accepted: int, tau: int
) -> RefFit:
    base = _fixed_sequence(scored, alpha, delta, min_accepted, 1.0)
    if base.n_accepted >= tau or len(scored) < tau:
        return base
    for t in TEMPERATURES:
        fit = _fixed_sequence(scored, alpha, delta, min_accepted, t)
        if fit.n_accepted >= tau:
            return fit
    return base


def reference(
    path: Path, *, alpha: float, delta: float, mode: str, min_accepted: int, tau: int
) -> list[RefFit]:
    """Every tier's fit for a score file, mode by mode as docs/calibration.md describes them."""
    by_item: dict[str, dict[int, tuple[float, bool]]] = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        by_item.setdefault(r["item_id"], {})[r["tier"]] = (
            r["confidence"],
            r["verdict"] != r["label"],
        )
    n_tiers = max(t for tiers in by_item.values() for t in tiers)
    tier_delta = delta / n_tiers if mode == "system" else delta
    fits: list[RefFit] = []
    reach = sorted(by_item)
    for tier in range(1, n_tiers + 1):
        if mode == "independent":
            reach = sorted(by_item)
        fit = _tier([by_item[i][tier] for i in reach], alpha, tier_delta, min_accepted, tau)
        fits.append(fit)
        if mode != "independent" and fit.threshold is not None:
            lam = fit.threshold
            reach = [i for i in reach if _scaled(by_item[i][tier][0], fit.temperature) < lam]
    return fits


def _write(path: Path, draw: Draw, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    confidence, wrong, _ = draw(rng, N_ITEMS)
    labels = np.where(rng.random(N_ITEMS) < 0.6, "YES", "NO")
    flip = {"YES": "NO", "NO": "YES"}
    write_scores(path, [
        ScoreRecord(
            item_id=f"item-{i:04d}", tier=t + 1, label=labels[i],
            verdict=flip[labels[i]] if wrong[i, t] else labels[i],
            confidence=round(float(confidence[i, t]), 6),
        )
        for i in range(N_ITEMS)
        for t in range(confidence.shape[1])
    ])  # fmt: skip
    return path


@pytest.fixture
def flat_scores(tmp_path: Path, flat_judges: Draw) -> Path:
    path = _write(tmp_path / "flat.jsonl", flat_judges, seed=28)
    top = max(json.loads(line)["confidence"] for line in path.read_text().splitlines())
    assert top <= 0.92  # never saturates: far below the first candidates
    return path


@pytest.fixture
def saturating_scores(tmp_path: Path, judges: Draw) -> Path:
    return _write(tmp_path / "sat.jsonl", judges, seed=9)


def _cli(path: Path, args: list[str]) -> dict[str, object]:
    app = typer.Typer()
    register(app)
    result = CliRunner().invoke(app, ["calibrate", "--scores", str(path), *args, "--json"])
    assert result.exit_code == 0, result.output
    printed: dict[str, object] = json.loads(result.stdout)
    return printed


def _check(
    path: Path, *, alpha: float, delta: float, mode: str, min_accepted: int | None, tau: int | None
) -> list[RefFit]:
    args = ["--alpha", str(alpha), "--delta", str(delta)]
    args += {"cascade": [], "independent": ["--independent"], "system": ["--system"]}[mode]
    args += [] if min_accepted is None else ["--min-accepted", str(min_accepted)]
    args += [] if tau is None else ["--tau", str(tau)]
    printed = _cli(path, args)
    m = 30 if min_accepted is None else min_accepted
    expected = reference(
        path, alpha=alpha, delta=delta, mode=mode, min_accepted=m, tau=5 if tau is None else tau
    )
    assert (printed["mode"], printed["alpha"], printed["delta"]) == (mode, alpha, delta)
    assert printed["min_accepted"] == m
    tiers = printed["tiers"]
    assert isinstance(tiers, dict)
    assert len(tiers) == len(expected)
    for t, ref in enumerate(expected, start=1):
        got = tiers[str(t)]
        assert got["threshold"] == ref.threshold, (t, got["reason"])
        assert (got["n"], got["n_accepted"], got["temperature"]) == (
            ref.n, ref.n_accepted, ref.temperature,
        )  # fmt: skip
        assert got["min_accepted"] == m
        if ref.threshold is None:
            assert got["risk"] is None
            assert got["risk_upper"] is None
        else:
            assert got["risk"] == pytest.approx(ref.n_disagree / ref.n_accepted)
            assert got["risk_upper"] == pytest.approx(ref.upper, rel=1e-9)
    return expected


@pytest.mark.parametrize(
    ("mode", "alpha", "delta", "min_accepted", "tau"),
    [
        ("cascade", 0.1, 0.1, None, None),  # the defaults: M = 30, τ = 5
        ("cascade", 0.15, 0.05, 30, 0),
        ("cascade", 0.2, 0.1, 50, None),
        ("cascade", 0.1, 0.1, 1, None),  # today's rule
        ("independent", 0.1, 0.1, None, None),
        ("independent", 0.15, 0.1, 10, None),
        ("independent", 0.12, 0.05, 1, 0),
        ("system", 0.12, 0.1, None, None),
    ],
)
def test_cli_equals_the_reference_on_confidences_that_never_saturate(
    flat_scores: Path,
    mode: str,
    alpha: float,
    delta: float,
    min_accepted: int | None,
    tau: int | None,
) -> None:
    _check(flat_scores, alpha=alpha, delta=delta, mode=mode, min_accepted=min_accepted, tau=tau)


@pytest.mark.parametrize(
    ("mode", "alpha", "delta", "min_accepted"),
    [("cascade", 0.1, 0.1, None), ("independent", 0.12, 0.05, 1), ("cascade", 0.08, 0.1, 40)],
)
def test_cli_equals_the_reference_on_saturating_judges(
    saturating_scores: Path, mode: str, alpha: float, delta: float, min_accepted: int | None
) -> None:
    fits = _check(
        saturating_scores, alpha=alpha, delta=delta, mode=mode, min_accepted=min_accepted, tau=None
    )
    assert fits[0].threshold is not None


@pytest.mark.parametrize("mode", ["cascade", "independent", "system"])
def test_the_default_gives_thresholds_where_todays_rule_gives_none(
    flat_scores: Path, mode: str
) -> None:
    """Not vacuous: on these judges M = 30 gives every tier a threshold, in every mode, and
    M = 1 gives none, as the demo showed."""
    default = reference(flat_scores, alpha=0.1, delta=0.1, mode=mode, min_accepted=30, tau=5)
    today = reference(flat_scores, alpha=0.1, delta=0.1, mode=mode, min_accepted=1, tau=5)
    assert all(fit.threshold is None for fit in today)
    assert all(fit.threshold is not None for fit in default)


def test_the_installed_reag_command_equals_the_reference(flat_scores: Path) -> None:
    """The command as a user types it, through the installed entry point, default M = 30."""
    reag = Path(sys.executable).with_name("reag")
    if not reag.exists():
        pytest.skip(f"no reag entry point beside {sys.executable}")
    args = ["calibrate", "--scores", str(flat_scores), "--alpha", "0.1", "--delta", "0.1"]
    done = subprocess.run(
        [str(reag), *args, "--json"], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    expected = reference(flat_scores, alpha=0.1, delta=0.1, mode="cascade", min_accepted=30, tau=5)
    assert printed["min_accepted"] == 30
    assert [printed["tiers"][str(t)]["threshold"] for t in (1, 2, 3)] == [
        fit.threshold for fit in expected
    ]
    assert all(fit.threshold is not None for fit in expected)
