"""Settings of the ledger service (``REAG_LEDGER_*``; the store under ``REAG_STORE_DSN``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr, model_validator

from reag.ledger.stuck import StuckSettings
from services.kit.settings import ServiceSettings


class LedgerSettings(ServiceSettings, StuckSettings):
    ledger_grpc_host: str = Field(
        default="127.0.0.1",
        description="Bind address of the gRPC results API and health service; 0.0.0.0 in a pod.",
    )
    ledger_grpc_port: int = Field(
        default=50061,
        ge=0,
        le=65535,
        description="Port of the gRPC results API and grpc.health.v1; 0 picks a free one.",
    )
    ledger_grpc_grace_s: float = Field(
        default=5.0,
        ge=0,
        description="Seconds in-flight gRPC calls may finish when the service stops.",
    )
    ledger_grpc_token: SecretStr | None = Field(
        default=None,
        description=(
            "Bearer token every gRPC call but the health checks must carry "
            "('authorization: Bearer <token>'), on the results and the traffic API alike; "
            "unset: no token asked. Set it (from a Secret) wherever the port is reachable "
            "from outside the pod."
        ),
    )
    ledger_grpc_allow_insecure: bool = Field(
        default=False,
        description=(
            "Serve the gRPC APIs beyond loopback with neither a token nor TLS (any caller on "
            "the network may use them). Off: such a ledger refuses to start."
        ),
    )
    ledger_grpc_tls_cert: Path | None = Field(
        default=None,
        description="PEM certificate chain the gRPC port serves TLS with; unset: plaintext.",
    )
    ledger_grpc_tls_key: Path | None = Field(
        default=None, description="PEM private key of ledger_grpc_tls_cert."
    )
    ledger_batch_max: int = Field(
        default=256,
        ge=1,
        description=(
            "Most events the ledger writes in one transaction: those that arrived while the "
            "previous one ran (group commit; a lone event is written at once). 1: one "
            "transaction per event."
        ),
    )
    ledger_traffic_api: bool = Field(
        default=True,
        description=(
            "Serve reag.v1.TrafficService on the gRPC port: apps in any language submit "
            "live traffic, which is redacted and produced to reag.traffic.v1."
        ),
    )

    @model_validator(mode="after")
    def _tls_pair(self) -> LedgerSettings:
        if (self.ledger_grpc_tls_cert is None) != (self.ledger_grpc_tls_key is None):
            raise ValueError(
                "TLS needs both REAG_LEDGER_GRPC_TLS_CERT and REAG_LEDGER_GRPC_TLS_KEY, or neither"
            )
        for path in (self.ledger_grpc_tls_cert, self.ledger_grpc_tls_key):
            if path is not None and not path.is_file():
                raise ValueError(f"TLS file {path} does not exist")
        if self.ledger_grpc_token is not None and not self.ledger_grpc_token.get_secret_value():
            raise ValueError("REAG_LEDGER_GRPC_TOKEN is set but empty; unset it or give a token")
        return self
