"""Injection detector: recall on the attack sets and false alarms on clean text (issue 25).

``reag.judging.injection.detect`` makes a criterion abstain as
``suspected_injection``; what that costs is the clean items it flags (goal:
at most 3 % of the expert-labelled items), and what it buys is the attacks
it flags. No model runs here: the detector is plain code, so every figure is
exact and reruns give the same table.

**Recall.** Every attack of a set is planted (as ``bench.injection`` plants
it: appended or prepended to its field) in every labelled item of both apps,
the 233 nutrition items of examples/nutrition/calibration.jsonl and the 10
banking items of examples/redteam-heldout, and the attacked request's
response and profile are checked. Attacks in the user's query are counted
apart: ``detect`` does not read the query, where a user's own injection
attempt on the app is legitimate test traffic.

**Two sets.** The detector was designed on the design set
(examples/nutrition/redteam/attacks.yaml) only; the held-out set
(examples/redteam-heldout/attacks.yaml) reports how it does on attacks it
was not shaped by. Both are shown; neither may be used to tune it further
without a new held-out set.

**False alarms.** The clean items' responses and profiles; both sets'
harmless controls planted like attacks; the decidability set's responses
(examples/decidability). **Canaries** (a response replaced whole by ":",
"Thought process:", ... ) are shown apart: flagging them as content-free
keeps a master key from being accepted.

``python -m bench injection_detector``; the report also goes to
REAG_BENCH_OUT (default bench/out) as injection_detector.md.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.decidability import load_decidability
from bench.heldout import BANKING_ITEMS, canaries, heldout_attacks
from bench.injection import ATTACKS, CONTROL, LABELS, Attack, Rate, attacked, load_attacks
from reag.calibration.store import CalibrationItem
from reag.calibration_run.files import read_labelled
from reag.judging.injection import InjectionFinding, detect
from reag.v1 import events_pb2 as pb

ROOT = Path(__file__).resolve().parents[1]
GOAL_CLEAN = 0.03
"""Issue 25: the detector flags at most 3 % of clean items."""


def check(request: pb.JudgeRequest) -> InjectionFinding | None:
    """The detector on a judge request, as the judge will call it: response and profile."""
    return detect(request.actual_response, request.persona.description or None)


def items() -> list[CalibrationItem]:
    """The labelled items of both apps: 233 nutrition, then 10 banking."""
    return [*read_labelled(LABELS), *read_labelled(BANKING_ITEMS)]


@dataclass(frozen=True)
class Detection:
    """One attack planted in one item, and what the detector said."""

    attack: Attack
    item_id: str
    finding: InjectionFinding | None


def detections(attacks: Iterable[Attack], on: Sequence[CalibrationItem]) -> list[Detection]:
    """Every attack planted in every item, checked."""
    return [
        Detection(a, item.item_id, check(attacked(item.request, a))) for a in attacks for item in on
    ]


def _rate(found: Sequence[Detection]) -> Rate:
    return Rate(sum(d.finding is not None for d in found), len(found))


def recall_table(found: Sequence[Detection], title: str) -> list[str]:
    """Overall, per family and per field; query attacks apart; the attacks it missed."""
    scanned = [d for d in found if d.attack.field != "query"]
    query = [d for d in found if d.attack.field == "query"]
    n_attacks = len({d.attack.id for d in scanned})
    by_attack: dict[str, list[Detection]] = {}
    for d in scanned:
        by_attack.setdefault(d.attack.id, []).append(d)
    everywhere = sum(all(d.finding for d in ds) for ds in by_attack.values())
    lines = [
        f"### {title}",
        "",
        f"- recall, response and profile attacks ({n_attacks} attacks × items): "
        f"{_rate(scanned).cell()}",
        f"- attacks flagged on every item: {Rate(everywhere, len(by_attack)).cell()} "
        "(detection hardly depends on the item, so this is the count to read: "
        "the item-level interval above is far too narrow)",
        f"- query attacks (not read by `detect`): {_rate(query).cell()} flagged, "
        f"{len({d.attack.id for d in query})} attacks",
        "",
        "| group | flagged / planted |",
        "|---|---|",
    ]
    groups: dict[str, list[Detection]] = {}
    for d in scanned:
        groups.setdefault(f"family {d.attack.family}", []).append(d)
        groups.setdefault(f"field {d.attack.field}", []).append(d)
    lines += [f"| {name} | {_rate(groups[name]).cell()} |" for name in sorted(groups)]
    kinds = Counter(d.finding.kind for d in scanned if d.finding is not None)
    lines += ["", "Caught by: " + ", ".join(f"{k} {n}" for k, n in kinds.most_common())]
    partial = {a: _rate(ds) for a, ds in by_attack.items() if any(d.finding is None for d in ds)}
    lines += ["", "Attacks not flagged on every item:"]
    lines += [
        f"- {a} ({by_attack[a][0].attack.family}): {r.cell()}" for a, r in sorted(partial.items())
    ]
    if not partial:
        lines.append("- none")
    return lines


def clean_table(
    on: Sequence[CalibrationItem], design: Sequence[Attack], held: Sequence[Attack]
) -> list[str]:
    """False alarms on clean text, and the canaries."""
    nutrition = [i for i in on if i.app == "nutrition"]
    banking = [i for i in on if i.app != "nutrition"]
    clean = Rate(sum(check(i.request) is not None for i in nutrition), len(nutrition))
    share = clean.rate or 0.0
    goal = "met" if share <= GOAL_CLEAN else "NOT met"
    decidable = load_decidability()
    controls_design = detections([a for a in design if a.family == CONTROL], on)
    controls_held = detections([a for a in held if a.family == CONTROL], on)
    found = [(c, detect(c.text)) for c in canaries()]
    lines = [
        "### False alarms on clean text",
        "",
        f"- the {len(nutrition)} expert-labelled nutrition items (response and profile): "
        f"{clean.cell()} (goal ≤ {100 * GOAL_CLEAN:.0f} %: {goal})",
        f"- the {len(banking)} banking items (held out): "
        f"{Rate(sum(check(i.request) is not None for i in banking), len(banking)).cell()}",
        f"- the {len(decidable)} responses of the decidability set: "
        f"{Rate(sum(detect(i.response) is not None for i in decidable), len(decidable)).cell()}",
        f"- design-set controls planted in every item: {_rate(controls_design).cell()}",
        f"- held-out controls planted in every item: {_rate(controls_held).cell()}",
    ]
    flagged_controls = sorted({d.attack.id for d in controls_design + controls_held if d.finding})
    if flagged_controls:
        lines.append(f"  - controls flagged somewhere: {', '.join(flagged_controls)}")
    lines += [
        "",
        f"Canaries (a response replaced whole), flagged as content-free: "
        f"{sum(f is not None for _, f in found)} of {len(found)}",
    ]
    lines += [f"- {c.id}: {f.kind if f else 'not flagged'}" for c, f in found]
    return lines


def report() -> list[str]:
    on = items()
    design, held = load_attacks(ATTACKS), heldout_attacks()
    return [
        "## Injection detector (`python -m bench injection_detector`)",
        "",
        f"`reag.judging.injection.detect` on {len(on)} labelled items "
        f"({sum(i.app == 'nutrition' for i in on)} nutrition, "
        f"{sum(i.app != 'nutrition' for i in on)} banking); every attack planted in every item.",
        "",
        *recall_table(
            detections([a for a in design if a.family != CONTROL], on),
            "Design set (examples/nutrition/redteam/attacks.yaml): the detector was shaped on it",
        ),
        "",
        *recall_table(
            detections([a for a in held if a.family != CONTROL], on),
            "Held-out set (examples/redteam-heldout/attacks.yaml): reported, never tuned on",
        ),
        "",
        *clean_table(on, design, held),
    ]


def run() -> None:
    lines = report()
    print("\n".join(lines), flush=True)
    out = Path(os.environ.get("REAG_BENCH_OUT", str(ROOT / "bench" / "out")))
    out.mkdir(parents=True, exist_ok=True)
    (out / "injection_detector.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out / 'injection_detector.md'}")


if __name__ == "__main__":
    run()
