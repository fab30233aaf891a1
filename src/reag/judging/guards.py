"""Deterministic guards in front of the judge's YES/NO question (issue 25).

Each returns an abstain reason (``slug: fixed words``) or None; the tier
(``reag.judging.tier``) abstains with it at once, calls no model, and the
item goes to review, never accepted and never an exchangeable calibration
label (``reag.judging.cascade.guarded_step``). Reasons never quote the text
read, so they may go to logs, metrics and review screens.

- ``suspected_injection``: the response or profile addresses the evaluator,
  fences, hides or encodes instructions (``reag.judging.injection.detect``);
- ``content_free``: the response has nothing to judge (empty, punctuation, a
  bare "Thought process:"). Its own slug, not ``suspected_injection``: it is
  usually an app failure rather than an attack, and a reviewer should read
  it as such; it still never reaches the model (a "master key" for judges);
- ``undecidable``: the criterion claims what a response's text cannot show
  (``reag.decidability``), whoever wrote it.
"""

from __future__ import annotations

from reag.decidability import undecidable
from reag.judging.injection import detect
from reag.v1 import events_pb2 as pb

SLUGS = ("suspected_injection", "content_free", "undecidable")
"""Every reason slug a guard writes: the metric's ``reason`` label values."""


def guard_reason(request: pb.JudgeRequest, *, check_decidable: bool = True) -> str | None:
    """Why ``request`` must abstain without a model call, or None to judge it."""
    finding = detect(request.actual_response, request.persona.description or None)
    if finding is not None:
        slug = "content_free" if finding.kind == "content_free" else "suspected_injection"
        return f"{slug}: {finding.kind}: {finding.reason}"
    if check_decidable and undecidable(request.criterion.text):
        return "undecidable: the criterion claims what the response text cannot show"
    return None


def slug(reason: str) -> str:
    """The reason's leading slug (the metric label)."""
    return reason.split(":", 1)[0]
