"""PII redaction at the first reag hop (docs/integrating.md, "What reaches reag").

Every way traffic arrives (the recorder, `reag traffic send`, gRPC ``Submit``,
OpenTelemetry spans, an app producing to ``reag.traffic.v1`` itself) passes its
events through :class:`Redactor` before anything is published, stored, judged,
logged, traced or dead-lettered. Recognisers are patterns with a validity check
where one exists (Luhn for card numbers, ISO 13616 mod 97 for IBANs, the
``ipaddress`` parser for IP addresses), so ordinary numbers in answers
("2,000 kcal", "150-200 mg") are left alone. A match becomes ``[REDACTED:KIND]``.

Profile attributes are also filtered by name: with an allow-list, attributes
not on it are dropped before their values are even scanned. A user id that
matches a recogniser (an app that keys users by e-mail) is replaced by a
stable pseudonym, so sampling by user still sees one user.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from reag.metrics import REDACTIONS
from reag.v1 import events_pb2 as pb

RecogniserName = Literal["email", "phone", "card", "iban", "ip"]
ALL_RECOGNISERS: tuple[RecogniserName, ...] = ("email", "card", "iban", "ip", "phone")


class RedactionPolicy(BaseModel):
    """What one app redacts. The default redacts every built-in kind and keeps all attributes."""

    enabled: bool = True
    recognisers: list[RecogniserName] = Field(default_factory=lambda: list(ALL_RECOGNISERS))
    custom: dict[str, str] = Field(
        default_factory=dict,
        description="Extra patterns, name -> regular expression; a match becomes "
        "[REDACTED:NAME] (the name upper-cased).",
    )
    allow_attributes: list[str] | None = Field(
        default=None,
        description="Profile attribute names kept (values still scanned); unset keeps all.",
    )

    @field_validator("custom")
    @classmethod
    def _compiles(cls, value: dict[str, str]) -> dict[str, str]:
        for name, pattern in value.items():
            if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,39}", name):
                raise ValueError(f"custom recogniser name {name!r}: letters, digits, _ only")
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"custom recogniser {name!r}: {exc}") from exc
        return value


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _card_ok(match: str) -> bool:
    digits = re.sub(r"\D", "", match)
    return 13 <= len(digits) <= 19 and _luhn(digits)


def _iban_ok(match: str) -> bool:
    compact = re.sub(r"\s", "", match).upper()
    if not 15 <= len(compact) <= 34:
        return False
    rearranged = compact[4:] + compact[:4]
    number = "".join(str(int(ch, 36)) for ch in rearranged)
    return int(number) % 97 == 1


def _ip_ok(match: str) -> bool:
    try:
        ipaddress.ip_address(match)
    except ValueError:
        return False
    return True


def _phone_ok(match: str) -> bool:
    digits = re.sub(r"\D", "", match)
    return 9 <= len(digits) <= 15


@dataclass(frozen=True, slots=True)
class _Recogniser:
    kind: str
    pattern: re.Pattern[str]
    valid: Callable[[str], bool] = field(default=lambda _m: True)
    # A cheap test the text must pass before the full pattern runs: most text has no
    # "@" and no long run of digits, and the patterns cost ~100 µs per kB each.
    hint: Callable[[str], bool] = field(default=lambda _t: True)


_DIGITS7 = re.compile(r"\d(?:[\s().-]{0,2}\d){6}")


def _has_digit_run(text: str) -> bool:
    return _DIGITS7.search(text) is not None


# Order matters: a card number or IBAN must be claimed before the phone pattern,
# which would otherwise take its digits.
_BUILTIN: dict[RecogniserName, _Recogniser] = {
    "email": _Recogniser(
        "EMAIL",
        re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"),
        hint=lambda text: "@" in text,
    ),
    "card": _Recogniser(
        "CARD", re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)"), _card_ok, _has_digit_run
    ),
    "iban": _Recogniser(
        "IBAN",
        re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b"),
        _iban_ok,
        _has_digit_run,
    ),
    "ip": _Recogniser(
        "IP",
        re.compile(
            r"(?<![\w.:])(?:(?:\d{1,3}\.){3}\d{1,3}"
            r"|(?:[0-9A-Fa-f]{1,4}:){2,7}[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{1,4})*"
            r"|::(?:[0-9A-Fa-f]{1,4}:){0,6}[0-9A-Fa-f]{1,4})(?![\w.:])"
        ),
        _ip_ok,
        lambda text: "." in text or ":" in text,
    ),
    "phone": _Recogniser(
        "PHONE",
        re.compile(r"(?<![\w+])(?:\+|00)?\d[\d\s().-]{7,18}\d(?!\w)"),
        _phone_ok,
        _has_digit_run,
    ),
}


def _pseudonym(value: str) -> str:
    return "user-" + hashlib.sha256(value.encode()).hexdigest()[:16]


class Redactor:
    """Applies one :class:`RedactionPolicy`; counts what it replaced by kind, never what."""

    def __init__(self, policy: RedactionPolicy | None = None) -> None:
        self.policy = policy or RedactionPolicy()
        chosen = [_BUILTIN[name] for name in ALL_RECOGNISERS if name in self.policy.recognisers]
        chosen += [
            _Recogniser(name.upper(), re.compile(pattern))
            for name, pattern in self.policy.custom.items()
        ]
        self._recognisers = chosen if self.policy.enabled else []
        self._allowed = (
            None if self.policy.allow_attributes is None else set(self.policy.allow_attributes)
        )

    def text(self, value: str, counts: Counter[str] | None = None) -> str:
        """``value`` with every recognised item replaced by ``[REDACTED:KIND]``."""
        if not value or not self._recognisers:
            return value
        for recogniser in self._recognisers:
            if not recogniser.hint(value):
                continue

            def replace(match: re.Match[str], r: _Recogniser = recogniser) -> str:
                if not r.valid(match.group(0)):
                    return match.group(0)
                if counts is not None:
                    counts[r.kind] += 1
                return f"[REDACTED:{r.kind}]"

            value = recogniser.pattern.sub(replace, value)
        return value

    def user_id(self, value: str, counts: Counter[str] | None = None) -> str:
        """A user id that carries PII becomes a stable pseudonym (one user stays one user)."""
        if value and self.text(value) != value:
            if counts is not None:
                counts["USER_ID"] += 1
            return _pseudonym(value)
        return value

    def traffic(
        self, event: pb.Traffic, *, where: str | None = None
    ) -> tuple[pb.Traffic, Counter[str]]:
        """A redacted copy of ``event`` and the number of replacements by kind.

        ``where`` names the hop (recorder, grpc, elicitor, otlp, dead_letter): the
        replacements are then counted in ``reag_redactions_total``.
        """
        out, counts = self._traffic(event)
        if where is not None:
            for kind, n in counts.items():
                REDACTIONS.labels(event.meta.app, kind, where).inc(n)
        return out, counts

    def _traffic(self, event: pb.Traffic) -> tuple[pb.Traffic, Counter[str]]:
        counts: Counter[str] = Counter()
        out = pb.Traffic()
        out.CopyFrom(event)
        if not self.policy.enabled:
            return out, counts
        out.query = self.text(event.query, counts)
        out.actual_response = self.text(event.actual_response, counts)
        out.situation = self.text(event.situation, counts)
        out.request_id = self.text(event.request_id, counts)
        out.target = self.text(event.target, counts)
        if not event.HasField("profile"):
            return out, counts
        out.profile.user_id = self.user_id(event.profile.user_id, counts)
        out.profile.persona_hint = self.text(event.profile.persona_hint, counts)
        out.profile.description = self.text(event.profile.description, counts)
        out.profile.ClearField("attributes")
        for name, value in event.profile.attributes.items():
            if self._allowed is not None and name not in self._allowed:
                counts["ATTRIBUTE_DROPPED"] += 1
                continue
            out.profile.attributes[self.text(name, counts)] = self.text(value, counts)
        return out, counts

    def raw(self, data: bytes) -> bytes:
        """Redacts bytes that could not be parsed (poison on its way to the dead letters).

        The result is no longer valid protobuf when anything was replaced; a dead
        letter of unparseable bytes cannot be replayed as it is in any case.
        """
        if not self._recognisers:
            return data
        text = data.decode("utf-8", errors="surrogateescape")
        return self.text(text).encode("utf-8", errors="surrogateescape")
