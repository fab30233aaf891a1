"""The web review's pages and routes (Starlette), over the shared queue in the store.

Flow: ``/`` lists the queue with filters; ``/next`` leases the next item and
redirects to ``/item/{key}``; the item's form (CSRF token, keys y/n/c/s) posts
the label, which is stored, published when it resolves the item, and answered
at once with the next item, the labelled one's judges shown above it
(``?done=key``, shown only if this reviewer labelled that item). A skip gives
the lease back and hides the item from this reviewer until the server
restarts, as a skip in ``reag review`` does until the session ends.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import parse_qs

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from reag.review.agreement import agreement
from reag.review.export import to_csv, to_jsonl
from reag.review.pages import (
    AppRow,
    Reveal,
    csp,
    filter_query,
    judges_view,
    render_item,
    render_message,
    render_queue,
    render_stats,
)
from reag.review.policy import VOTES, Vote
from reag.review.queue import AlreadyLabelledError, Filters, NotHeldError, ReviewQueue
from reag.review.session import ReviewSink
from shell.review_web.auth import COOKIE, Auth

log = logging.getLogger(__name__)

WAITING_LIMIT = 50
MAX_BODY = 64 * 1024
_LOGIN = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>reag review</title>
<style nonce="{nonce}">body{{font:15px system-ui,sans-serif;margin:3rem auto;max-width:26rem}}
input,button{{font:inherit;padding:.4rem;width:100%;margin:.3rem 0}}</style></head><body>
<h1>reag review</h1><p>{message}</p><form method="post" action="/login">
<label for="token">Reviewer token</label><input type="password" name="token" id="token"
autocomplete="off" required><button type="submit">Sign in</button></form></body></html>"""


@dataclass(slots=True)
class WebReview:
    """What the routes share: the queue, the sink for resolved labels, who is who."""

    queue: ReviewQueue
    sink: ReviewSink
    auth: Auth
    secure_cookie: bool = False
    skipped: dict[str, set[int]] = field(default_factory=dict)

    async def publish_resolved(self, key: int, outcome_review: object) -> None:
        """Send the item's one Review; on failure it stays unpublished for the retry loop."""
        from reag.v1 import events_pb2 as pb

        assert isinstance(outcome_review, pb.Review)
        try:
            await self.sink.publish(outcome_review)
        except Exception:  # any broker fault: the retry loop re-sends from the store
            log.warning("review of item %d not published yet; will retry", key, exc_info=True)
            return
        self.queue.mark_published(key)


def _page(html: str, nonce: str, status: int = 200) -> Response:
    return Response(
        html, status_code=status, media_type="text/html; charset=utf-8", headers=_headers(nonce)
    )


def _headers(nonce: str) -> dict[str, str]:
    return {
        "Content-Security-Policy": csp(nonce),
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "same-origin",
        "Cache-Control": "no-store",
    }


def _filters(request: Request) -> Filters:
    q = request.query_params
    return Filters(
        app=q.get("app", ""), persona_category=q.get("persona", ""), reason=q.get("reason", "")
    )


def _cross_site(request: Request) -> bool:
    """A POST whose ``Origin`` is another site (browsers send it on form posts): refused,
    the sign-in form included, so no other page can sign a reviewer in as someone else.
    (The pages' referrer policy is ``same-origin``: under ``no-referrer`` browsers send
    ``Origin: null`` even on the pages' own posts.)"""
    origin = request.headers.get("origin")
    if origin is None:
        return False
    host = request.headers.get("host", "")
    return origin not in (f"http://{host}", f"https://{host}")


async def _form(request: Request) -> dict[str, list[str]]:
    """The urlencoded body (no multipart parser needed for these small forms)."""
    body = await request.body()
    if len(body) > MAX_BODY:
        return {}
    return parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True)


Handler = Callable[[Request, str], Awaitable[Response]]


class _Routes:
    """The pages' handlers, over one ``WebReview``."""

    def __init__(self, web: WebReview) -> None:
        self.web, self.auth = web, web.auth

    def who(self, request: Request) -> str | None:
        if self.auth.open:
            return self.auth.local_reviewer
        header = request.headers.get("authorization", "")
        if header.lower().startswith("bearer "):
            return self.auth.reviewer_for_token(header[7:].strip())
        return self.auth.reviewer_for_cookie(request.cookies.get(COOKIE))

    def signed_in(self, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            reviewer = self.who(request)
            if reviewer is None:
                return RedirectResponse("/login", status_code=303)
            return await handler(request, reviewer)

        return endpoint

    async def login_page(self, request: Request) -> Response:
        nonce = secrets.token_urlsafe(16)
        return _page(_LOGIN.format(nonce=nonce, message="Sign in with your reviewer token."), nonce)

    async def login(self, request: Request) -> Response:
        if _cross_site(request):
            return PlainTextResponse("cross-site sign-in refused", status_code=403)
        token = (await _form(request)).get("token", [""])[0]
        reviewer = self.auth.reviewer_for_token(token) if token else None
        if reviewer is None:
            nonce = secrets.token_urlsafe(16)
            return _page(_LOGIN.format(nonce=nonce, message="Unknown token."), nonce, 403)
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(
            COOKIE,
            self.auth.cookie_for(reviewer),
            httponly=True,
            samesite="strict",
            secure=self.web.secure_cookie,
        )
        return response

    def reveal_for(self, request: Request, reviewer: str) -> Reveal | None:
        """The judges of the item named by ``?done=``, if and only if this reviewer labelled it."""
        done = request.query_params.get("done", "")
        if not done.isdigit():
            return None
        vote = self.web.queue.labelled_by(int(done), reviewer)
        item = self.web.queue.item(int(done))
        if vote is None or item is None:
            return None
        state = self.web.queue.resolved_label(int(done))
        return judges_view(item.abstain, vote, state)

    async def queue_page(self, request: Request, reviewer: str) -> Response:
        nonce = secrets.token_urlsafe(16)
        filters = _filters(request)
        rows = [
            AppRow(app, self.web.queue.has_threshold(app), audits, abstentions, resolved)
            for app, audits, abstentions, resolved in self.web.queue.counts()
        ]
        waiting = [
            w
            for w in self.web.queue.waiting(reviewer, filters, WAITING_LIMIT)
            if w.key not in self.web.skipped.get(reviewer, set())
        ]
        html = render_queue(
            reviewer=reviewer,
            nonce=nonce,
            filters=filters,
            facets=self.web.queue.facets(),
            apps=rows,
            waiting=waiting,
            limit=WAITING_LIMIT,
            per_item=self.web.queue.per_item,
        )
        return _page(html, nonce)

    async def next_item(self, request: Request, reviewer: str) -> Response:
        filters = _filters(request)
        item = self.web.queue.take(reviewer, filters, exclude=self.web.skipped.get(reviewer, set()))
        done = request.query_params.get("done", "")
        query = filter_query(filters)
        if done.isdigit():
            query += ("&" if query else "?") + f"done={done}"
        if item is None:
            nonce = secrets.token_urlsafe(16)
            html = render_message(
                "Nothing left for you",
                "No item under these filters is waiting for your label.",
                reviewer=reviewer,
                nonce=nonce,
                reveal=self.reveal_for(request, reviewer),
            )
            return _page(html, nonce)
        return RedirectResponse(f"/item/{item.key}{query}", status_code=303)

    async def item_page(self, request: Request, reviewer: str) -> Response:
        key = int(request.path_params["key"])
        item = self.web.queue.held(key, reviewer)
        if item is None:
            return RedirectResponse("/next" + filter_query(_filters(request)), status_code=303)
        nonce = secrets.token_urlsafe(16)
        html = render_item(
            item,
            reviewer=reviewer,
            nonce=nonce,
            csrf=self.auth.csrf_for(reviewer),
            filters=_filters(request),
            reveal=self.reveal_for(request, reviewer),
        )
        return _page(html, nonce)

    async def label(self, request: Request, reviewer: str) -> Response:
        key = int(request.path_params["key"])
        form = await _form(request)
        if _cross_site(request) or not self.auth.csrf_ok(reviewer, form.get("csrf", [""])[0]):
            return PlainTextResponse("bad or missing CSRF token", status_code=403)
        votes = [v for v in form.get("vote", []) if v]
        vote = votes[0] if votes else ""
        if vote not in VOTES:
            return PlainTextResponse("vote must be YES, NO, CANNOT_TELL or SKIP", 400)
        note = form.get("note", [""])[0][:4000]
        query = filter_query(_filters(request))
        if vote == "SKIP":
            self.web.queue.release(key, reviewer)
            self.web.skipped.setdefault(reviewer, set()).add(key)
            return RedirectResponse(f"/next{query}", status_code=303)
        checked: Vote = vote
        try:
            outcome = self.web.queue.record(key, reviewer, checked, note)
        except (NotHeldError, AlreadyLabelledError) as exc:
            return PlainTextResponse(f"not recorded: {exc}", status_code=409)
        if outcome.review is not None:
            await self.web.publish_resolved(key, outcome.review)
        joiner = "&" if query else "?"
        return RedirectResponse(f"/next{query}{joiner}done={key}", status_code=303)

    async def stats(self, request: Request, reviewer: str) -> Response:
        nonce = secrets.token_urlsafe(16)
        html = render_stats(reviewer=reviewer, nonce=nonce, apps=agreement(self.web.queue.labels()))
        return _page(html, nonce)

    def export(self, kind: str) -> Handler:
        async def handler(request: Request, reviewer: str) -> Response:
            app = request.query_params.get("app") or None
            records = self.web.queue.labels(app)
            body, media = (
                (to_jsonl(records), "application/x-ndjson")
                if kind == "jsonl"
                else (to_csv(records), "text/csv; charset=utf-8")
            )
            headers = _headers(secrets.token_urlsafe(8))
            headers["Content-Disposition"] = f'attachment; filename="reag-labels.{kind}"'
            return Response(body, media_type=media, headers=headers)

        return handler

    async def healthz(self, request: Request) -> Response:
        return PlainTextResponse("ok")

    async def metrics(self, request: Request) -> Response:
        """The process's Prometheus metrics, as every reag pod serves them (no user data)."""
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)


def build_app(web: WebReview) -> Starlette:
    r = _Routes(web)
    routes = [
        Route("/", r.signed_in(r.queue_page)),
        Route("/next", r.signed_in(r.next_item)),
        Route("/item/{key:int}", r.signed_in(r.item_page), methods=["GET"]),
        Route("/item/{key:int}", r.signed_in(r.label), methods=["POST"]),
        Route("/stats", r.signed_in(r.stats)),
        Route("/export.jsonl", r.signed_in(r.export("jsonl"))),
        Route("/export.csv", r.signed_in(r.export("csv"))),
        Route("/login", r.login_page, methods=["GET"]),
        Route("/login", r.login, methods=["POST"]),
        Route("/healthz", r.healthz),
        Route("/metrics", r.metrics),
    ]
    return Starlette(routes=routes)
