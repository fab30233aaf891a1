"""Who may reach a gRPC API: an open port without a token or TLS must be a stated choice.

Every gRPC server in reag (the results API and the traffic API beside it) accepts
any caller unless it asks for a bearer token. Bound to loopback, only this host
can call; bound to anything else, the whole network can read results and submit
traffic. :func:`refuse_open_bind` is the one check every server runs before it
binds: beyond loopback it needs a token or TLS, or an explicit
``allow_insecure`` (``REAG_LEDGER_GRPC_ALLOW_INSECURE``; the chart's
``grpc.allowInsecure``).
"""

from __future__ import annotations

import ipaddress


class InsecureBindError(ValueError):
    """A server without a token or TLS was asked to listen beyond loopback."""


def is_loopback(host: str) -> bool:
    """``localhost`` and loopback addresses (``127.0.0.0/8``, ``::1``); nothing else."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve to anything


def refuse_open_bind(
    host: str, *, token: str | None, tls: bool, allow_insecure: bool, setting: str
) -> None:
    """Raises :class:`InsecureBindError` for a non-loopback ``host`` with no token and no TLS.

    ``setting`` names the variable that allows it anyway, for the message.
    """
    if token or tls or allow_insecure or is_loopback(host):
        return
    raise InsecureBindError(
        f"refusing to serve gRPC on {host} without a bearer token or TLS: any caller on the "
        f"network could use it. Set a token (REAG_LEDGER_GRPC_TOKEN) or TLS "
        f"(REAG_LEDGER_GRPC_TLS_CERT/KEY), bind to 127.0.0.1, or set {setting}=true to "
        "accept an open port."
    )
