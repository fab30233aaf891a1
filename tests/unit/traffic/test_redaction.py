"""PII redaction: every recogniser catches its kind, leaves ordinary text alone, and
no field of a traffic event escapes it."""

from __future__ import annotations

import pytest

from reag.traffic.redaction import RedactionPolicy, Redactor
from reag.v1 import events_pb2 as pb

EMAIL = "jane.doe+diet@example-mail.co.uk"
PHONE = "+44 20 7946 0958"
CARD = "4111 1111 1111 1111"  # Luhn-valid test number
IBAN = "GB82 WEST 1234 5698 7654 32"
IPV4 = "192.168.10.42"
IPV6 = "2001:db8:85a3::8a2e:370:7334"


@pytest.mark.parametrize(
    ("item", "kind"),
    [
        (EMAIL, "EMAIL"),
        (PHONE, "PHONE"),
        ("(555) 867-5309 ext", "PHONE"),
        (CARD, "CARD"),
        ("5500-0000-0000-0004", "CARD"),
        (IBAN, "IBAN"),
        ("DE89370400440532013000", "IBAN"),
        (IPV4, "IP"),
        (IPV6, "IP"),
    ],
)
def test_each_recogniser_replaces_its_kind(item: str, kind: str) -> None:
    out = Redactor().text(f"reach me at {item} please")
    assert item.split(" ", maxsplit=1)[0] not in out
    assert f"[REDACTED:{kind}]" in out


@pytest.mark.parametrize(
    "text",
    [
        "Aim for 2,000 kcal a day and 150-200 mg of caffeine at most.",
        "The label lists 12 g sugar per 100 g; 3.5 servings.",
        "Version 1.2.3 of the app; ISO 8601 date 2026-12-01.",
        "A card-like number that fails Luhn: 4111 1111 1111 1112.",
    ],
)
def test_ordinary_numbers_stay(text: str) -> None:
    assert Redactor().text(text) == text


def test_custom_patterns_and_disabled_kinds() -> None:
    redactor = Redactor(RedactionPolicy(recognisers=["email"], custom={"member": r"MBR-\d{6}"}))
    out = redactor.text(f"member MBR-123456, mail {EMAIL}, phone {PHONE}")
    assert "[REDACTED:MEMBER]" in out
    assert "[REDACTED:EMAIL]" in out
    assert PHONE in out  # phone recogniser not chosen


def test_invalid_custom_pattern_is_refused() -> None:
    with pytest.raises(ValueError, match="custom recogniser"):
        RedactionPolicy(custom={"bad": "("})


def _event() -> pb.Traffic:
    event = pb.Traffic(
        request_id=f"req for {EMAIL}",
        query=f"I am {EMAIL}, call {PHONE}",
        actual_response=f"Paid with {CARD}; your IP {IPV4}",
        situation=f"IBAN {IBAN}",
        target="nutrilens",
    )
    event.meta.app = "nutrition"
    event.profile.user_id = EMAIL
    event.profile.description = f"phone {PHONE}"
    event.profile.attributes["contact"] = EMAIL
    event.profile.attributes["diet"] = "vegan"
    event.profile.attributes["card"] = CARD
    return event


def test_no_field_of_a_traffic_event_keeps_pii() -> None:
    redacted, counts = Redactor().traffic(_event())
    raw = redacted.SerializeToString()
    for canary in (EMAIL, PHONE, CARD, IBAN, IPV4, "4111111111111111"):
        assert canary.encode() not in raw
    assert redacted.profile.attributes["diet"] == "vegan"
    assert redacted.profile.user_id.startswith("user-")
    assert counts["EMAIL"] >= 3
    assert counts["CARD"] == 2
    assert counts["USER_ID"] == 1


def test_user_pseudonym_is_stable_and_plain_ids_stay() -> None:
    a, _ = Redactor().traffic(_event())
    b, _ = Redactor().traffic(_event())
    assert a.profile.user_id == b.profile.user_id
    plain = pb.Traffic()
    plain.profile.user_id = "u-1234"
    assert Redactor().traffic(plain)[0].profile.user_id == "u-1234"


def test_allow_list_drops_other_attributes() -> None:
    redactor = Redactor(RedactionPolicy(allow_attributes=["diet"]))
    redacted, counts = redactor.traffic(_event())
    assert dict(redacted.profile.attributes) == {"diet": "vegan"}
    assert counts["ATTRIBUTE_DROPPED"] == 2


def test_disabled_policy_changes_nothing() -> None:
    event = _event()
    redacted, counts = Redactor(RedactionPolicy(enabled=False)).traffic(event)
    assert redacted == event
    assert not counts


def test_raw_bytes_are_scanned_as_text() -> None:
    data = _event().SerializeToString() + b"\xff\xfe trailing junk"
    out = Redactor().raw(data)
    assert EMAIL.encode() not in out
    assert b"\xff\xfe" in out
