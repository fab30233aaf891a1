"""The one place ``REAG_KAFKA__*`` becomes keyword arguments of a plain aiokafka client.

Services publish through FastStream's broker (``services.kit.broker``), which takes the
same settings as a security object; everything else that talks to Kafka directly (topic
creation, the epoch check, the judges' thresholds read, ``reag dlq``, ``reag traffic
send``, the calibrator's publish) builds its admin client, consumer or producer from here,
so SASL and TLS are spelled once.
"""

from __future__ import annotations

from typing import Any

from services.kit.settings import KafkaSettings


def security_options(kafka: KafkaSettings) -> dict[str, Any]:
    """Security keyword arguments (protocol, TLS context, SASL credentials), no address:
    for a client that is given its bootstrap servers separately (the recorder)."""
    options: dict[str, Any] = {"security_protocol": kafka.security_protocol}
    context = kafka.ssl_context()
    if context is not None:
        options["ssl_context"] = context
    if kafka.security_protocol.startswith("SASL"):
        assert kafka.sasl_password is not None  # KafkaSettings checked it
        options |= {
            "sasl_mechanism": kafka.sasl_mechanism,
            "sasl_plain_username": kafka.sasl_username,
            "sasl_plain_password": kafka.sasl_password.get_secret_value(),
        }
    return options


def client_options(kafka: KafkaSettings) -> dict[str, Any]:
    """Connection keyword arguments for any aiokafka client (admin, consumer, producer)."""
    return {"bootstrap_servers": kafka.bootstrap_servers, **security_options(kafka)}
