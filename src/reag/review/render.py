"""One abstained criterion as a reviewer reads it in a terminal.

Blind first: ``render_case`` shows the case (criterion, persona, query,
response, evidence) and nothing any tier thought of it; ``render_judges``
shows the tiers' verdicts, confidences, why it is here and its cost only
after the reviewer has given a label. A label anchored on a judge's verdict
would measure the judge against itself, and audits (``reag.trust``) must look
exactly like abstentions so reviewers treat them alike.

The user's query and the app's response are untrusted: they are shown
verbatim but fenced and labelled as such, and stripped of control characters
so a response cannot move the cursor, recolour the screen or fake a prompt.
"""

from __future__ import annotations

import re

from reag.v1 import events_pb2 as pb

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
LABELS = {pb.LABEL_YES: "YES", pb.LABEL_NO: "NO", pb.LABEL_UNSPECIFIED: "?"}
RULE = "─" * 72


def clean(text: str) -> str:
    """Printable text only; tabs and newlines survive."""
    return _CONTROL.sub("", text.replace("\r\n", "\n"))


def _fenced(title: str, text: str) -> list[str]:
    body = clean(text).splitlines() or [""]
    return [f"{title} (untrusted, shown verbatim):", *(f"  │ {line}" for line in body)]


def _attempt_line(attempt: pb.TierAttempt, *, last: bool) -> str:
    threshold = f"{attempt.threshold:.3f}" if attempt.has_threshold else "none (accepts nothing)"
    outcome = "accepted" if attempt.accepted else ("gave up" if last else "escalated")
    return (
        f"  tier {attempt.tier} {clean(attempt.model) or '?'}: "
        f"{LABELS.get(attempt.verdict, '?')}  confidence {attempt.confidence:.3f}  "
        f"threshold {threshold}  ${attempt.cost_usd:.6f}  → {outcome}"
    )


def render_case(abstain: pb.Abstain, *, position: int | None = None) -> str:
    """The case, blind: no tier's verdict, confidence or reason, and no sign of an audit."""
    request = abstain.request
    criterion = request.criterion
    meta = abstain.meta
    heading = f"case {meta.case_id} · criterion {criterion.criterion_id}"
    if request.n_criteria:
        heading += f" ({criterion.index + 1} of {request.n_criteria})"
    if position is not None:
        heading = f"#{position}  {heading}"
    lines = [RULE, heading, f"app {meta.app}" + (f" · run {meta.run_id}" if meta.run_id else "")]
    lines += ["", f"Criterion: {clean(criterion.text)}"]
    if request.test_objective:
        lines.append(f"Test objective: {clean(request.test_objective)}")
    if request.expected_results:
        lines.append(f"Expected results: {clean(request.expected_results)}")
    persona = request.persona
    name = persona.category_name or persona.category_id or "unknown"
    lines.append(
        f"Persona: {clean(name)}"
        + (f" — {clean(persona.description)}" if persona.description else "")
    )
    lines += ["", *_fenced("User query", request.query), ""]
    lines += _fenced("App response", request.actual_response)
    lines += ["", "Evidence from the requirements:"]
    lines += [
        f'  - [{clean(e.doc_id)}] "{clean(e.sentence)}"' + (f" — {clean(e.why)}" if e.why else "")
        for e in request.evidence
    ] or ["  (none cited)"]
    return "\n".join(lines)


def render_judges(abstain: pb.Abstain) -> str:
    """What the tiers made of it, for after the label: verdicts, confidences, reason, cost."""
    request = abstain.request
    lines = ["Judges (shown after your label):"]
    history = list(request.history)
    lines += [
        _attempt_line(attempt, last=i == len(history) - 1) for i, attempt in enumerate(history)
    ] or ["  (no tier ran)"]
    if abstain.audit:
        lines.append("Why it is here: a random audit of live traffic, labelled by you blind")
    elif abstain.reason:
        lines.append(f"Why it is here: {clean(abstain.reason)}")
    cost = abstain.cumulative_cost_usd or sum(a.cost_usd for a in history)
    lines.append(f"Judging cost so far: ${cost:.6f} (every tier that ran)")
    return "\n".join(lines)
