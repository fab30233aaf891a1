"""The ledger's wiring of the traffic ingress: it produces only to a topic it declares."""

from __future__ import annotations

import pytest

from reag.traffic.redaction import Redactor
from services.ledger.traffic_api import traffic_ingress


async def _accept(_topic: str, _value: bytes, _key: bytes) -> None:
    """A producer whose broker always acknowledges."""


def test_the_ingress_goes_to_the_suffixed_traffic_topic() -> None:
    ingress = traffic_ingress(
        produce=_accept, redactor_for=lambda _a: Redactor(), app_known=bool, topic_suffix="-x"
    )
    assert ingress.topic == "reag.traffic.v1-x"


def test_the_servicer_refuses_a_topic_the_ledger_does_not_declare(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from services.kit import topology

    ledger = topology.SERVICES["ledger"]
    monkeypatch.setitem(
        topology.SERVICES,
        "ledger",
        topology.ServiceSpec("ledger", ledger.consumes, produces=(topology.RESULTS,)),
    )
    with pytest.raises(ValueError, match=r"does not declare reag\.traffic\.v1"):
        traffic_ingress(produce=_accept, redactor_for=lambda _a: Redactor(), app_known=bool)
