"""PII redaction at the first reag hop (docs/integrating.md, "What reaches reag").

Every way traffic arrives (the recorder, `reag traffic send`, gRPC ``Submit``,
OpenTelemetry spans, an app producing to ``reag.traffic.v1`` itself) passes its
events through :class:`Redactor` before anything is published, stored, judged,
logged, traced or dead-lettered. Recognisers are patterns with a validity check
where one exists (Luhn for card numbers, ISO 13616 mod 97 for IBANs, the
``ipaddress`` parser for IP addresses, the HMRC prefix rules for National
Insurance numbers), so ordinary numbers in answers ("2,000 kcal", "150-200 mg")
are left alone. A match becomes ``[REDACTED:KIND]``.

Hostile text is the normal case here, so two rules hold for every pattern:

- **Bounded work.** Every repetition is bounded and every pattern starts at a
  boundary (a look-behind), so one start position costs at most a few hundred
  steps and a text costs time linear in its length: a 1 MiB pathological
  payload per pattern family takes well under a second of CPU
  (``python -m reag.traffic.redaction`` prints the figures). Sizes are checked
  before any pattern runs at every way in (gRPC ``Submit``, the recorder, the
  consumers); :func:`check_size` is the one check. Custom patterns from a
  policy are the operator's own and are not bounded here: keep them free of
  nested repetition.
- **Recognise the normalised text, change the original.** Text is matched in
  its NFKC form with invisible characters (zero-width, bidi controls, soft
  hyphens, control bytes) taken out, so fullwidth digits, no-break spaces and
  an e-mail split by zero-width spaces are caught; replacements are mapped back
  onto the original, and a text in which nothing was found is returned as it
  came, byte for byte, so prompts and stored scores do not change for clean
  text.

Out of scope, documented in docs/pipeline.md: names and street addresses
written as prose (no pattern tells "Jane Smith, 12 Elm Street" from ordinary
words without a language model), and dates that carry no sign of being a date
of birth (a date is redacted as ``DOB`` after "born", "DOB", "date of birth" or
in a profile attribute with such a name).

Profile attributes are also filtered by name: with an allow-list, attributes
not on it are dropped before their values are even scanned. A user id (or a
case or run id) that matches a recogniser is replaced by a keyed pseudonym,
HMAC-SHA-256 with the deployment's secret (``REAG_PSEUDONYM_KEY``,
:func:`pseudonym_key`), so sampling by user still sees one user and nobody
without the key can recompute the pseudonym from a guessed address.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import os
import re
import secrets
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field, field_validator

from reag.metrics import REDACTIONS
from reag.v1 import events_pb2 as pb

if TYPE_CHECKING:
    from reag.settings import ReagSettings

log = logging.getLogger("reag.traffic.redaction")

RecogniserName = Literal["email", "phone", "card", "iban", "ip", "nino", "dob"]
ALL_RECOGNISERS: tuple[RecogniserName, ...] = (
    "email",
    "card",
    "iban",
    "nino",
    "dob",
    "ip",
    "phone",
)

DEFAULT_MAX_EVENT_BYTES = 1_048_576
"""The default size limit of an event (``REAG_KAFKA__MAX_EVENT_BYTES``)."""


class TooLargeError(ValueError):
    """A payload over the size limit, refused before any pattern ran on it."""


def check_size(size: int, limit: int, what: str = "the event") -> None:
    """Refuse ``size`` bytes over ``limit``: called before redaction at every way in, so a
    pattern never runs on more than the limit. The message names sizes, never content."""
    if size > limit:
        raise TooLargeError(
            f"{what} is {size} bytes, over the {limit}-byte limit (REAG_KAFKA__MAX_EVENT_BYTES)"
        )


class RedactionPolicy(BaseModel):
    """What one app redacts. The default redacts every built-in kind and keeps all attributes."""

    enabled: bool = True
    recognisers: list[RecogniserName] = Field(default_factory=lambda: list(ALL_RECOGNISERS))
    custom: dict[str, str] = Field(
        default_factory=dict,
        description="Extra patterns, name -> regular expression; a match becomes "
        "[REDACTED:NAME] (the name upper-cased). They run on every event: keep them free "
        "of nested repetition (no `(a+)+`), or hostile text can make them slow.",
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


# --- validity checks -----------------------------------------------------------------------


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


_NON_DIGITS = re.compile(r"\D")


def _card_ok(match: str) -> bool:
    digits = _NON_DIGITS.sub("", match)
    return 13 <= len(digits) <= 19 and _luhn(digits)


def _iban_ok(match: str) -> bool:
    compact = re.sub(r"\s", "", match).upper()
    if not 15 <= len(compact) <= 34 or not compact.isascii():
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
    digits = _NON_DIGITS.sub("", match)
    return 9 <= len(digits) <= 15


# HMRC: D, F, I, Q, U, V are never the first or second letter, O never the second, and
# these prefixes are not allocated. QQ is allowed: it is the prefix of every example
# number, and an example written into a prompt is what a tester pastes.
_NINO_NOT_FIRST = set("DFIUV")
_NINO_NOT_SECOND = set("DFIUVO")
_NINO_NOT_PREFIX = {"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"}


def _nino_ok(match: str) -> bool:
    prefix = match[:2].upper()
    return (
        prefix[0] not in _NINO_NOT_FIRST
        and prefix[1] not in _NINO_NOT_SECOND
        and prefix not in _NINO_NOT_PREFIX
    )


# --- the patterns ---------------------------------------------------------------------------

_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DATE = (
    r"(?:\d{1,2}[./-]\d{1,2}[./-](?:\d{4}|\d{2})"
    r"|\d{4}[./-]\d{1,2}[./-]\d{1,2}"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?[ ]{{1,2}}(?:of[ ])?{_MONTH}\.?,?[ ]{{1,2}}\d{{4}}"
    rf"|{_MONTH}\.?[ ]{{1,2}}\d{{1,2}}(?:st|nd|rd|th)?,?[ ]{{1,2}}\d{{4}})(?![\d])"
)
_DOB_CUE = r"(?<![\w])(?:d\.?o\.?b\.?|date[ ]of[ ]birth|birth[ -]?date|birthday|born(?:[ ]on)?)"
_DIGITS7 = re.compile(r"\d(?:[\s().-]{0,2}\d){6}")


def _has_digit_run(text: str) -> bool:
    return _DIGITS7.search(text) is not None


@dataclass(frozen=True, slots=True)
class _Recogniser:
    kind: str
    pattern: re.Pattern[str]
    valid: Callable[[str], bool] = field(default=lambda _m: True)
    # A cheap test the text must pass before the full pattern runs: most text has no
    # "@" and no long run of digits.
    hint: Callable[[str], bool] = field(default=lambda _t: True)
    group: str | None = None  # only this named group is replaced (the date after "born")


# Order matters: a card number or IBAN must be claimed before the phone pattern,
# which would otherwise take its digits. Every repetition below is bounded and
# every pattern starts behind a boundary: see the module docstring.
_BUILTIN: dict[RecogniserName, _Recogniser] = {
    "email": _Recogniser(
        "EMAIL",
        # Local part at most 64 characters (RFC 5321), at most 8 labels of 63, a TLD of
        # letters (any script: IDN addresses) or punycode.
        re.compile(
            r"(?<![\w.%+-])[\w.%+-]{1,64}@(?:[\w-]{1,63}\.){1,8}"
            r"(?:[^\W\d_]{2,63}|xn--[A-Za-z0-9-]{1,59})(?![\w-])"
        ),
        hint=lambda text: "@" in text,
    ),
    "card": _Recogniser(
        "CARD",
        re.compile(
            r"(?<!\d)(?:(?:\d[ -]?){12,18}\d"
            r"|\d{4}(?:\.\d{4}){2}\.\d{1,7}|\d{4}\.\d{6}\.\d{4,5})(?!\d)"
        ),
        _card_ok,
        _has_digit_run,
    ),
    "iban": _Recogniser(
        "IBAN",
        re.compile(
            r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?:[ ]?[A-Za-z0-9]{4}){2,7}"
            r"(?:[ ]?[A-Za-z0-9]{1,4})?(?![A-Za-z0-9])"
        ),
        _iban_ok,
        _has_digit_run,
    ),
    "nino": _Recogniser(
        "NINO",
        re.compile(
            r"(?<![A-Za-z0-9])[A-Za-z]{2}[ ]?\d{2}[ ]?\d{2}[ ]?\d{2}[ ]?[A-Da-d](?![A-Za-z0-9])"
        ),
        _nino_ok,
    ),
    "dob": _Recogniser(
        "DOB",
        re.compile(
            rf"{_DOB_CUE}[ ]{{0,3}}(?:[:=-]|is|was)?[ ]{{0,3}}(?P<pii>{_DATE})", re.IGNORECASE
        ),
        group="pii",
    ),
    "ip": _Recogniser(
        "IP",
        re.compile(
            # IPv6, with an IPv4 tail (::ffff:192.0.2.128) tried first; then IPv4, which
            # may be followed by a port (10.0.0.5:8080) or end a sentence.
            r"(?<![\w.:])(?:[0-9A-Fa-f]{0,4}:){2,7}"
            r"(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9A-Fa-f]{1,4})?(?![\w:]|\.\w)"
            r"|(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?!\w|\.\d)"
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

# A profile attribute with one of these names holds a date of birth: any date in it is one.
_DOB_ATTRIBUTE = re.compile(
    r"(?:dob|d\.o\.b\.?|date[ _-]?of[ _-]?birth|birth[ _-]?(?:date|day)|born(?:[ _-]?on)?)",
    re.IGNORECASE,
)
_DATE_ONLY = _Recogniser("DOB", re.compile(rf"(?<!\d){_DATE}", re.IGNORECASE))


# --- normalisation ---------------------------------------------------------------------------

# Characters that change nothing a reader sees but split what a pattern looks for:
# format characters (zero-width space and joiners, bidi controls, soft hyphen, BOM, tags),
# control bytes (a tab, newline, CR, VT and FF stay: they are spacing), the combining
# grapheme joiner and variation selectors, and lone surrogates (undecodable bytes).
_INVISIBLE_CLASS = (
    "\x00-\x08\x0e-\x1f\x7f-\x9f\xad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    "\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb"
    "\ud800-\udfff\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
_INVISIBLE = re.compile(f"[{_INVISIBLE_CLASS}]")
# What normalisation may change: anything outside printable ASCII but the spacing controls.
_SPECIAL = re.compile(r"[^\t\n\r\x0b\x0c\x20-\x7e]")


@dataclass(frozen=True, slots=True)
class _Normalised:
    """``text`` as recognisers see it; ``starts[j]`` is the original index of ``text[j]``
    (None: the identity, nothing changed)."""

    text: str
    starts: list[int] | None


def _char_form(ch: str) -> str:
    if _INVISIBLE.match(ch):
        return ""
    return unicodedata.normalize("NFKC", ch)


def _normalise(text: str) -> _Normalised:
    """NFKC per character with the invisible characters taken out, with an offset map.

    Per character, not per string: recognition needs digits, letters and spaces in
    their plain form, and per-character forms keep every recognised character tied
    to one original index. Printable ASCII, the common case, is the identity.
    """
    if _SPECIAL.search(text) is None:
        return _Normalised(text, None)
    parts: list[str] = []
    starts: list[int] = []
    forms: dict[str, str] = {}
    at = 0
    for special in _SPECIAL.finditer(text):
        i = special.start()
        if i > at:
            parts.append(text[at:i])
            starts.extend(range(at, i))
        ch = special.group()
        form = forms.get(ch)
        if form is None:
            form = forms[ch] = _char_form(ch)
        if form:
            parts.append(form)
            starts.extend([i] * len(form))
        at = i + 1
    if at < len(text):
        parts.append(text[at:])
        starts.extend(range(at, len(text)))
    normal = "".join(parts)
    if normal == text:
        return _Normalised(text, None)
    return _Normalised(normal, starts)


# --- pseudonyms ------------------------------------------------------------------------------

_PROCESS_KEY = secrets.token_bytes(32)
KEY_FILE = "pseudonym.key"


def pseudonym_key(settings: ReagSettings) -> bytes:
    """The deployment's pseudonym key: ``REAG_PSEUDONYM_KEY`` when set, else one kept in
    ``<state_dir>/pseudonym.key``, generated on first use (the embedded stack, whose
    processes share a state directory).

    Production sets ``REAG_PSEUDONYM_KEY`` from a secret, the same value in every
    service and recorder: a key per pod would give one user a pseudonym per pod.
    Rotating it (docs/pipeline.md) gives every user a new pseudonym from then on; the
    pseudonyms already stored stay as they are and cannot be linked to the new ones.
    """
    configured = configured_key(settings)
    if configured is not None:
        return configured
    path = settings.state_dir / KEY_FILE
    if settings.store_dsn is not None and not settings.resolved_store_dsn().startswith("sqlite"):
        log.warning(
            "REAG_PSEUDONYM_KEY is not set: using the key in %s, which other replicas do not "
            "share; set it from a secret wherever more than one process redacts",
            path,
        )
    return _stored_key(path)


def configured_key(settings: ReagSettings) -> bytes | None:
    """``REAG_PSEUDONYM_KEY``, else the embedded stack's stored key if there is one; None
    when neither is (a process outside the stack: the recorder then warns)."""
    configured = settings.pseudonym_key
    if configured is not None and configured.get_secret_value():
        return configured.get_secret_value().encode()
    try:
        return (settings.state_dir / KEY_FILE).read_bytes().strip() or None
    except OSError:
        return None


def _stored_key(path: Path) -> bytes:
    key = secrets.token_hex(32).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process of the stack wrote it first
        return path.read_bytes().strip()
    with os.fdopen(fd, "wb") as out:
        out.write(key)
    return key


# Ids reag made itself: pseudonyms (a later hop sees them again), synthetic run ids
# (``run-`` and 12 hex digits) and, checked against the app, case ids from
# ``reag.ids.case_id_for``. Hex digits alone can read as a phone or card number.
_REAG_ID = re.compile(r"(?:user|case|run)-[0-9a-f]{16}|run-[0-9a-f]{12}")
_CASE_TAIL = re.compile(r"[0-9a-f]{16}")


def _reag_made(value: str, app: str) -> bool:
    if _REAG_ID.fullmatch(value):
        return True
    head, sep, tail = value.rpartition("-")
    return bool(sep) and head == app and _CASE_TAIL.fullmatch(tail) is not None


def _pseudonym(prefix: str, value: str, key: bytes) -> str:
    return prefix + hmac.new(key, value.encode(), hashlib.sha256).hexdigest()[:16]


# --- the redactor ----------------------------------------------------------------------------


class Redactor:
    """Applies one :class:`RedactionPolicy`; counts what it replaced by kind, never what.

    ``pseudonym_key`` keys the pseudonyms of user, case and run ids; None is a key drawn
    for this process only (tests, a one-off script): services and the recorder pass the
    deployment's (:func:`pseudonym_key`).
    """

    def __init__(
        self, policy: RedactionPolicy | None = None, *, pseudonym_key: bytes | None = None
    ) -> None:
        self.policy = policy or RedactionPolicy()
        self._key = pseudonym_key or _PROCESS_KEY
        chosen = [_BUILTIN[name] for name in ALL_RECOGNISERS if name in self.policy.recognisers]
        chosen += [
            _Recogniser(name.upper(), re.compile(pattern))
            for name, pattern in self.policy.custom.items()
        ]
        self._recognisers = chosen if self.policy.enabled else []
        self._dob = self.policy.enabled and "dob" in self.policy.recognisers
        self._allowed = (
            None if self.policy.allow_attributes is None else set(self.policy.allow_attributes)
        )

    def text(self, value: str, counts: Counter[str] | None = None) -> str:
        """``value`` with every recognised item replaced by ``[REDACTED:KIND]``; ``value``
        itself when nothing was found."""
        if not value or not self._recognisers:
            return value
        return _redact(value, self._recognisers, counts)

    def user_id(self, value: str, counts: Counter[str] | None = None) -> str:
        """A user id that carries PII becomes a stable pseudonym (one user stays one user)."""
        return self._id(value, "user-", "USER_ID", counts)

    def _id(
        self, value: str, prefix: str, kind: str, counts: Counter[str] | None, app: str = ""
    ) -> str:
        """``value``, or its pseudonym when it carries PII; an id reag made is left alone."""
        if not value or not self._recognisers or _reag_made(value, app):
            return value
        if self.text(value) != value:
            if counts is not None:
                counts[kind] += 1
            return _pseudonym(prefix, value, self._key)
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
                REDACTIONS.labels(out.meta.app, kind, where).inc(n)
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
        # Ids a producer chose: a pseudonym keeps them usable (dedup, grouping) without PII.
        app = event.meta.app
        out.meta.case_id = self._id(event.meta.case_id, "case-", "CASE_ID", counts, app)
        out.meta.run_id = self._id(event.meta.run_id, "run-", "RUN_ID", counts, app)
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
            kept = self.text(value, counts)
            if self._dob and _DOB_ATTRIBUTE.fullmatch(name.strip()):
                kept = _redact(kept, [_DATE_ONLY], counts)
            out.profile.attributes[self.text(name, counts)] = kept
        return out, counts

    def raw(self, data: bytes, *, max_bytes: int | None = None) -> bytes:
        """:func:`redact_bytes` under this redactor's policy."""
        if not self._recognisers:
            return data
        return _redact_bytes(_cut(data, max_bytes), self._recognisers)


CUT_MARGIN_BYTES = 256
"""What is dropped before a cut as well: no card, phone, IBAN or address is longer, so
nothing is kept half-recognised at the edge."""


def _cut(data: bytes, max_bytes: int | None) -> bytes:
    if max_bytes is None or len(data) <= max_bytes:
        return data
    return data[: max(0, max_bytes - CUT_MARGIN_BYTES)]


def redact_bytes(data: bytes, *, max_bytes: int | None = None) -> bytes:
    """Bytes that could not be parsed (poison on its way to the dead letters), redacted with
    every built-in recogniser.

    Undecodable bytes and control bytes between the digits of a card number
    (``4111\\x001111...``, UTF-16 text) are invisible to recognition, as in any text,
    so they cannot hide it; the bytes around what was found are kept as they came.
    The result is no longer valid protobuf when anything was replaced; a dead letter
    of unparseable bytes cannot be replayed as it is in any case.

    ``max_bytes`` bounds the work on an oversized payload: bytes past it are cut
    before any pattern runs, and ``CUT_MARGIN_BYTES`` before the cut with them, so
    no item is kept in part; an oversized payload could not be replayed as it was.
    """
    return _redact_bytes(_cut(data, max_bytes), [_BUILTIN[name] for name in ALL_RECOGNISERS])


def _redact_bytes(data: bytes, recognisers: list[_Recogniser]) -> bytes:
    text = data.decode("utf-8", errors="surrogateescape")
    out = _redact(text, recognisers, None)
    if out is text:
        return data
    return out.encode("utf-8", errors="surrogateescape")


def _redact(value: str, recognisers: list[_Recogniser], counts: Counter[str] | None) -> str:
    """Finds items in the normalised text, each recogniser on what the earlier ones left,
    and replaces their original spans; ``value`` itself when nothing was found."""
    normal = _normalise(value)
    work = normal.text
    spans: list[tuple[int, int, str]] = []
    for recogniser in recognisers:
        if not recogniser.hint(work):
            continue
        found: list[tuple[int, int, str]] = []
        for match in recogniser.pattern.finditer(work):
            if not recogniser.valid(match.group(0)):
                continue
            start, end = match.span(recogniser.group or 0)
            found.append((start, end, recogniser.kind))
        if not found:
            continue
        # What is claimed is masked (same length, so offsets hold) for the next ones: the
        # phone pattern must not take a card number's digits.
        pieces, at = [], 0
        for start, end, _kind in found:
            pieces += [work[at:start], "\x00" * (end - start)]
            at = end
        pieces.append(work[at:])
        work = "".join(pieces)
        spans += found
    if not spans:
        return value
    spans.sort()
    out, at = [], 0
    for found_start, found_end, kind in spans:
        start, end = found_start, found_end
        if normal.starts is not None:
            start, end = normal.starts[start], normal.starts[end - 1] + 1
        start = max(start, at)  # two normalised spans from one original character
        out += [value[at:start], f"[REDACTED:{kind}]"]
        at = max(at, end)
        if counts is not None:
            counts[kind] += 1
    out.append(value[at:])
    return "".join(out)
