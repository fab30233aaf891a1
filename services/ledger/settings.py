"""Settings of the ledger service (``REAG_LEDGER_*``; the store under ``REAG_STORE_DSN``)."""

from __future__ import annotations

from pydantic import Field

from services.kit.settings import ServiceSettings


class LedgerSettings(ServiceSettings):
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
