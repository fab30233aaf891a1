"""Six labelled criterion–response pairs: the example pool of judge tests on the real model.

Two personas' worth of YES and NO per criterion, so that stratified drawing
has both labels to give every annotator.
"""

from __future__ import annotations

from reag.judging.exemplars import Label, LabelledExample

_ROWS: list[tuple[Label, str, str, str]] = [
    ("YES", "t2d", "Warns about sugar.", "High in sugar (24 g/100 g): keep portions small."),
    ("NO", "t2d", "Warns about sugar.", "Looks like a great breakfast choice!"),
    ("YES", "ckd", "Mentions potassium.", "Watch out: potassium chloride salt substitute."),
    ("NO", "ckd", "Mentions potassium.", "Salt is fine in moderation."),
    ("YES", "celiac", "Flags gluten.", "Contains wheat flour: not gluten-free."),
    ("NO", "celiac", "Flags gluten.", "Tasty crackers with sesame."),
]
TINY_POOL = [
    LabelledExample(f"x{i}", label, persona, criterion, "Is this OK for me?", response)
    for i, (label, persona, criterion, response) in enumerate(_ROWS)
]
