"""Shadow controls: which live cases go on to the LLM stages, decided before any call.

Three gates, in order, each with its own reason when it sheds:
- ``sampled_out``: a deterministic sample by a hash of the user id (a user is
  in or out for good, so a user's cases stay comparable) or the request id;
- ``rate_limited``: more than ``max_cases_per_minute`` admitted in the last 60 s;
- ``budget_usd`` / ``budget_compute``: the app's recorded spend in the last hour
  (every service's calls, reag.traffic.spend) has reached its budget.

Shedding is an operator's choice for shadow traffic and is counted by reason
(``reag_traffic_shed_total``); a transient fault is never handled this way.
A synthetic case (reag's own simulated users) is never sampled or rate-limited:
someone asked for it; budgets still hold.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from reag.traffic.policy import ShadowPolicy
from reag.traffic.sampling import kept, sample_key
from reag.traffic.spend import WindowSpend
from reag.v1 import events_pb2 as pb

SpendLookup = Callable[[str], WindowSpend]


def no_spend(_app: str) -> WindowSpend:
    """A spend lookup for places with no store (tests, a dry run): nothing spent."""
    return WindowSpend(0, 0.0, 0.0)


def sampled_in(policy: ShadowPolicy, event: pb.Traffic) -> bool:
    """Whether ``event`` is in the policy's sample, on the key the recorder sampled on.

    An event with neither a request id nor a case id never gets here (the codec
    dead-letters an event without a case id); such a one is sampled out.
    """
    if policy.sample_rate >= 1.0:
        return True
    key = sample_key(
        event.meta.app,
        event.profile.user_id,
        event.request_id,
        event.meta.case_id,
        by=policy.sample_by,
    )
    return key is not None and kept(key, policy.sample_rate)


class ShadowGate:
    """Per-app admission with a sliding one-minute window and a cached spend lookup."""

    def __init__(
        self,
        spend: SpendLookup,
        *,
        spend_cache_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._spend = spend
        self._spend_cache_s = spend_cache_s
        self._clock = clock
        self._admitted: dict[str, deque[float]] = {}
        self._spent: dict[str, tuple[float, WindowSpend]] = {}

    def _window_spend(self, app: str, now: float) -> WindowSpend:
        hit = self._spent.get(app)
        if hit is None or now - hit[0] > self._spend_cache_s:
            hit = (now, self._spend(app))
            self._spent[app] = hit
        return hit[1]

    def admit(self, policy: ShadowPolicy, event: pb.Traffic) -> str | None:
        """None to admit the case, or the reason it is shed."""
        app = event.meta.app
        synthetic = event.meta.origin == pb.ORIGIN_SYNTHETIC
        if not synthetic and not sampled_in(policy, event):
            return "sampled_out"
        now = self._clock()
        if policy.max_usd_per_hour is not None or policy.max_compute_s_per_hour is not None:
            spent = self._window_spend(app, now)
            if policy.max_usd_per_hour is not None and spent.cost_usd >= policy.max_usd_per_hour:
                return "budget_usd"
            if (
                policy.max_compute_s_per_hour is not None
                and spent.compute_s >= policy.max_compute_s_per_hour
            ):
                return "budget_compute"
        if policy.max_cases_per_minute is not None and not synthetic:
            window = self._admitted.setdefault(app, deque())
            while window and now - window[0] >= 60.0:
                window.popleft()
            if len(window) >= policy.max_cases_per_minute:
                return "rate_limited"
            window.append(now)
        return None
