"""Documents every request's oracle must see, whatever the ranking: the pinned ones.

Ranking finds what a request's words share with the corpus. The rules that decide
many cases share few words with the request: the persona of the user's category
(who is asking), and the sections an app's manifest marks ``always`` (scope, safety,
security), which decide whether a request should be declined, escalated or refused at
all. Issue 24 measured recall near 0.2 without them on a new app. Pinned documents
join the ranked selection within the same bound on documents per request, taking
the places of the lowest-ranked selected documents.
"""

from __future__ import annotations

from collections.abc import Sequence

from reag.corpus.model import Document


def pinned_addresses(
    documents: Sequence[Document], persona_id: str, *, persona: bool, always: bool
) -> list[str]:
    """The persona document of ``persona_id`` (if asked and present), then the ``always`` ones."""
    out: list[str] = []
    if persona and persona_id:
        out += [d.address for d in documents if d.kind == "persona" and d.local_id == persona_id]
    if always:
        out += [d.address for d in documents if d.metadata.get("always") and d.address not in out]
    return out


def with_pinned(order: Sequence[str], n: int, pinned: Sequence[str], cap: int) -> list[str]:
    """The first ``n`` of ``order`` with every pinned address added, at most ``cap`` in all.

    Pinned addresses already among the first ``n`` cost nothing; the others replace
    the lowest-ranked of them when the bound is reached. Selected documents keep the
    ranking's order; the pinned ones the ranking did not select follow them.
    """
    pins = list(dict.fromkeys(pinned))[:cap]
    selected = list(order[:n])
    extra = [p for p in pins if p not in selected]
    while selected and len(selected) + len(extra) > cap:
        dropped = next((a for a in reversed(selected) if a not in pins), None)
        if dropped is None:
            break
        selected.remove(dropped)
    return selected + extra
