"""The web review's pages: blind item views, the judges after a label, queue and agreement.

Blind rule, stated once here: ``blind_view`` copies only what a reviewer needs
to judge the case (criterion, objective, persona, request, response, cited
evidence) out of the abstain; it never reads ``request.history``, ``reason``,
``audit`` or the cost, so no page built from it can carry a tier's verdict or
confidence. ``judges_view`` reads them, and the server passes it to a page
only for an item the reviewer has already labelled.

Every text from a user, the app or a model is untrusted: the templates
autoescape everything (Jinja2, as the run report), the pages load nothing from
elsewhere, and the Content Security Policy (``csp``) allows only the inline
style and the one keyboard script carrying the response's nonce.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from reag.review.agreement import AppAgreement
from reag.review.queue import Filters, QueueItem
from reag.review.render import LABELS, clean
from reag.v1 import events_pb2 as pb


def csp(nonce: str) -> str:
    """The Content-Security-Policy header of every page."""
    return (
        "default-src 'none'; "
        f"script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; img-src data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    )


@dataclass(frozen=True, slots=True)
class Evidence:
    doc_id: str
    sentence: str
    why: str


@dataclass(frozen=True, slots=True)
class BlindItem:
    """What a reviewer sees before labelling; nothing any tier made of the case."""

    app: str
    case_id: str
    criterion_id: str
    criterion: str
    objective: str
    expected: str
    persona: str
    persona_description: str
    query: str
    response: str
    evidence: tuple[Evidence, ...]
    position: str


@dataclass(frozen=True, slots=True)
class Attempt:
    tier: int
    model: str
    verdict: str
    confidence: str
    threshold: str
    cost: str


@dataclass(frozen=True, slots=True)
class Reveal:
    criterion_id: str
    vote: str
    resolved: str
    attempts: tuple[Attempt, ...]
    why: str


def blind_view(abstain: pb.Abstain) -> BlindItem:
    request = abstain.request
    criterion = request.criterion
    persona = request.persona
    return BlindItem(
        app=abstain.meta.app or request.meta.app,
        case_id=abstain.meta.case_id,
        criterion_id=criterion.criterion_id,
        criterion=clean(criterion.text),
        objective=clean(request.test_objective),
        expected=clean(request.expected_results),
        persona=clean(persona.category_name or persona.category_id or "unknown"),
        persona_description=clean(persona.description),
        query=clean(request.query),
        response=clean(request.actual_response),
        evidence=tuple(
            Evidence(clean(e.doc_id), clean(e.sentence), clean(e.why)) for e in request.evidence
        ),
        position=(f"{criterion.index + 1} of {request.n_criteria}" if request.n_criteria else ""),
    )


def judges_view(abstain: pb.Abstain, vote: str, resolved: str | None) -> Reveal:
    """The tiers' verdicts and why the item was in review: only after ``vote`` was given."""
    history = list(abstain.request.history)
    attempts = tuple(
        Attempt(
            tier=a.tier,
            model=clean(a.model) or "?",
            verdict=LABELS.get(a.verdict, "?"),
            confidence=f"{a.confidence:.3f}",
            threshold=f"{a.threshold:.3f}" if a.has_threshold else "none",
            cost=f"${a.cost_usd:.6f}",
        )
        for a in history
    )
    if abstain.audit:
        why = "a random audit of live traffic, labelled blind"
    else:
        why = clean(abstain.reason) or "no tier accepted it"
    return Reveal(
        criterion_id=abstain.request.criterion.criterion_id,
        vote=vote,
        resolved=resolved or "",
        attempts=attempts,
        why=why,
    )


def filter_query(filters: Filters) -> str:
    """``?app=..&persona=..&reason=..`` for links that keep the reviewer's filters."""
    pairs = [
        (name, value)
        for name, value in (
            ("app", filters.app),
            ("persona", filters.persona_category),
            ("reason", filters.reason),
        )
        if value
    ]
    return "?" + urlencode(pairs) if pairs else ""


@dataclass(frozen=True, slots=True)
class AppRow:
    app: str
    has_threshold: bool
    audits: int
    abstentions: int
    resolved: int


@dataclass(frozen=True, slots=True)
class Waiting:
    app: str
    case_id: str
    persona: str
    criterion: str


@dataclass(frozen=True, slots=True)
class AgreementRow:
    app: str
    labels: int
    resolved: int
    pairs: int
    raw: str
    kappa: str
    tiers: str


def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("reag.review", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


_ENV = _environment()


def render_item(
    item: QueueItem,
    *,
    reviewer: str,
    nonce: str,
    csrf: str,
    filters: Filters,
    reveal: Reveal | None = None,
) -> str:
    return _ENV.get_template("item.j2").render(
        item=blind_view(item.abstain),
        key=item.key,
        reviewer=reviewer,
        nonce=nonce,
        csrf=csrf,
        query=filter_query(filters),
        reveal=reveal,
    )


def render_message(
    title: str, text: str, *, reviewer: str, nonce: str, reveal: Reveal | None = None
) -> str:
    return _ENV.get_template("message.j2").render(
        title=title, text=text, reviewer=reviewer, nonce=nonce, reveal=reveal
    )


def render_queue(
    *,
    reviewer: str,
    nonce: str,
    filters: Filters,
    facets: dict[str, list[str]],
    apps: Sequence[AppRow],
    waiting: Sequence[QueueItem],
    limit: int,
    per_item: int,
) -> str:
    return _ENV.get_template("queue.j2").render(
        reviewer=reviewer,
        nonce=nonce,
        facets={
            "app": facets["app"],
            "persona": facets["persona_category"],
            "reason": facets["reason"],
        },
        chosen={
            "app": filters.app,
            "persona": filters.persona_category,
            "reason": filters.reason,
        },
        query=filter_query(filters),
        apps=apps,
        waiting=[
            Waiting(
                w.app,
                w.abstain.meta.case_id,
                clean(w.persona_category or "unknown"),
                blind_view(w.abstain).criterion,
            )
            for w in waiting
        ],
        limit=limit,
        per_item=per_item,
    )


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def render_stats(*, reviewer: str, nonce: str, apps: Sequence[AppAgreement]) -> str:
    rows = [
        AgreementRow(
            app=a.app,
            labels=a.labels,
            resolved=a.items_resolved,
            pairs=len(a.pairs),
            raw=_share(a.raw_agreement),
            kappa=_share(a.kappa),
            tiers=", ".join(
                f"tier {tier}: {agree}/{n} ({agree / n:.0%})"
                for tier, (agree, n) in sorted(a.tiers.items())
            )
            or "n/a",
        )
        for a in apps
    ]
    return _ENV.get_template("stats.j2").render(reviewer=reviewer, nonce=nonce, apps=rows)
