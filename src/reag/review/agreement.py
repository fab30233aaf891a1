"""How far reviewers agree with each other and the judges agree with them, per app.

Cohen's kappa is over items two reviewers both labelled YES or NO (the first two
such labels of each item); it corrects raw agreement for what two reviewers with
their YES rates would reach by chance. A judge tier's agreement is the share of
resolved items where its verdict equals the resolved label; an audit's history
holds every tier's verdict, an abstention's only those that ran.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from reag.review.queue import LabelRecord, decisive


def cohen_kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Kappa of paired YES/NO labels; None with no pair, 1.0 when both always say the same
    single label (no disagreement to correct for)."""
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(a == b for a, b in pairs) / n
    yes_a = sum(a == "YES" for a, _ in pairs) / n
    yes_b = sum(b == "YES" for _, b in pairs) / n
    chance = yes_a * yes_b + (1 - yes_a) * (1 - yes_b)
    if chance >= 1.0:
        return 1.0 if observed == 1.0 else 0.0
    return (observed - chance) / (1 - chance)


@dataclass(slots=True)
class AppAgreement:
    app: str
    labels: int = 0
    items_resolved: int = 0
    pairs: list[tuple[str, str]] = field(default_factory=list)
    tiers: dict[int, tuple[int, int]] = field(default_factory=dict)  # tier -> (agree, n)

    @property
    def kappa(self) -> float | None:
        return cohen_kappa(self.pairs)

    @property
    def raw_agreement(self) -> float | None:
        if not self.pairs:
            return None
        return sum(a == b for a, b in self.pairs) / len(self.pairs)


def agreement(records: Sequence[LabelRecord]) -> list[AppAgreement]:
    """Per app, sorted by name: label count, reviewer pairs and each tier's agreement."""
    by_item: dict[int, list[LabelRecord]] = defaultdict(list)
    for record in decisive(records):
        by_item[record.key].append(record)
    apps: dict[str, AppAgreement] = {}
    for record in records:
        apps.setdefault(record.app, AppAgreement(record.app)).labels += 1
    for item_labels in by_item.values():
        stats = apps[item_labels[0].app]
        if len(item_labels) >= 2:
            stats.pairs.append((item_labels[0].vote, item_labels[1].vote))
        resolved = item_labels[0].resolved_label
        if resolved is None:
            continue
        stats.items_resolved += 1
        for tier, verdict in item_labels[0].history:
            agree, n = stats.tiers.get(tier, (0, 0))
            stats.tiers[tier] = (agree + (verdict == resolved), n + 1)
    return [apps[name] for name in sorted(apps)]
