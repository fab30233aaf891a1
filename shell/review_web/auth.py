"""Who is asking: one token per reviewer, signed session cookies, CSRF tokens, bind guard.

Tokens come from a file (``name token`` per line, ``#`` comments) so each label
carries the reviewer who gave it. Without any token the server runs as one
local reviewer and refuses to bind beyond the loopback interface: anyone who
can reach it could label as that reviewer. Cookies and CSRF tokens are HMACs
under a secret drawn at start, so nothing is kept per session and a restart
signs everybody out.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from dataclasses import dataclass, field
from pathlib import Path

COOKIE = "reag_review"


class TokenFileError(ValueError):
    """A tokens file that cannot be used; the message names the file and line, never a token."""


class UnsafeBindError(ValueError):
    """Asked to listen beyond localhost with no reviewer tokens."""


def load_tokens(path: Path) -> dict[str, str]:
    """Token -> reviewer name, from ``name token`` lines."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise TokenFileError(f"cannot read tokens file {path}: {exc.strerror}") from exc
    tokens: dict[str, str] = {}
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        parts = text.replace(":", " ", 1).split()
        if len(parts) != 2:
            raise TokenFileError(f"{path}:{number}: expected 'reviewer token'")
        name, token = parts
        if len(token) < 16:
            raise TokenFileError(f"{path}:{number}: the token of {name} is under 16 characters")
        if token in tokens:
            raise TokenFileError(f"{path}:{number}: a token is given twice")
        tokens[token] = name
    return tokens


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, tokens: dict[str, str]) -> None:
    """Raise ``UnsafeBindError`` unless ``host`` is loopback or reviewers have tokens."""
    if not tokens and not is_loopback(host):
        raise UnsafeBindError(
            f"refusing to listen on {host} without reviewer tokens: give --tokens-file "
            "(or REAG_REVIEW_TOKENS_FILE), or bind to 127.0.0.1"
        )


@dataclass(slots=True)
class Auth:
    """Reviewer identity for the web pages."""

    tokens: dict[str, str]
    local_reviewer: str
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))

    @property
    def open(self) -> bool:
        """No tokens: every request is the local reviewer (loopback only, see check_bind)."""
        return not self.tokens

    def _sign(self, purpose: str, value: str) -> str:
        return hmac.new(self.secret, f"{purpose}\0{value}".encode(), hashlib.sha256).hexdigest()

    def reviewer_for_token(self, token: str) -> str | None:
        for known, name in self.tokens.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                return name
        return None

    def cookie_for(self, reviewer: str) -> str:
        return f"{reviewer}.{self._sign('cookie', reviewer)}"

    def reviewer_for_cookie(self, cookie: str | None) -> str | None:
        if not cookie or "." not in cookie:
            return None
        name, signature = cookie.rsplit(".", 1)
        if hmac.compare_digest(signature, self._sign("cookie", name)) and (
            name in self.tokens.values()
        ):
            return name
        return None

    def csrf_for(self, reviewer: str) -> str:
        return self._sign("csrf", reviewer)

    def csrf_ok(self, reviewer: str, token: str) -> bool:
        return bool(token) and hmac.compare_digest(token, self.csrf_for(reviewer))
