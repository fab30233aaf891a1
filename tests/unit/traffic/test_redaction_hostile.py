"""Redaction under hostile input (issue 23): bounded CPU on pathological text, the PII kinds
the first recognisers missed, keyed pseudonyms, and clean text left byte for byte."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from pydantic import SecretStr

from bench.redaction import MIB, PATHOLOGICAL
from reag.settings import ReagSettings
from reag.traffic.redaction import Redactor, pseudonym_key, redact_bytes
from reag.v1 import events_pb2 as pb
from tests.cpu_bound import within_cpu


@pytest.mark.parametrize("family", sorted(PATHOLOGICAL))
def test_one_mib_of_pathological_text_is_bounded(family: str) -> None:
    text = PATHOLOGICAL[family](MIB)
    redactor = Redactor()
    with within_cpu(f"redacting 1 MiB of {family}"):
        redactor.text(text)


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        ("NI number AB 12 34 56 C, thanks", "12 34 56", "NINO"),
        ("my nino is qq123456c.", "123456", "NINO"),
        ("DOB: 12/03/1985", "12/03/1985", "DOB"),
        ("I was born on 12 March 1985 in Leeds", "12 March 1985", "DOB"),
        ("date of birth is 1985-03-12", "1985-03-12", "DOB"),
        ("iban de89 3704 0044 0532 0130 00 thanks", "0532", "IBAN"),
        ("server 10.0.0.5:8080 is down", "10.0.0.5", "IP"),
        ("mapped ::ffff:192.0.2.128 here", "192.0.2.128", "IP"),
        ("my address is 10.0.0.5.", "10.0.0.5", "IP"),
        ("card 4111.1111.1111.1111 ok", "4111.1111", "CARD"),
        ("card 4111\u00a01111\u00a01111\u00a01111 ok", "1111\u00a01111", "CARD"),
        ("card 4111\u202f1111\u202f1111\u202f1111 ok", "1111\u202f1111", "CARD"),
        ("card \uff14\uff11\uff11\uff11 " * 1 + "\uff11\uff11\uff11\uff11 " * 3, "\uff11", "CARD"),
        ("mail jane\u200b.doe@exa\u200dmple.com now", "exa", "EMAIL"),
        ("mail \u7528\u6237@\u4f8b\u5b50.\u5e7f\u544a now", "\u7528\u6237", "EMAIL"),
        ("mail jos\u00e9@correo.espa\u00f1a.es", "jos\u00e9", "EMAIL"),
        ("mail jane\uff20example.com", "jane", "EMAIL"),
    ],
)
def test_kinds_the_first_recognisers_missed(text: str, secret: str, kind: str) -> None:
    out = Redactor().text(text)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out


@pytest.mark.parametrize(
    "text",
    [
        "x\u200by: a zero-width space in clean text",
        "\uff46\uff55\uff4c\uff4c\uff57\uff49\uff44\uff54\uff48 words, \u00a0no-break space",
        "caf\u0065\u0301 \u202eright-to-left\u202c and a soft hy\u00adphen",
        "Aim for 2,000 kcal; ISO date 2026-12-01; version 1.2.3; at 12:30:45.",
        "Born to run, released 12/03/1985 as a single.",  # a date, but not after "born"
    ],
)
def test_clean_text_stays_byte_identical(text: str) -> None:
    assert Redactor().text(text).encode() == text.encode()


def test_invisible_characters_around_a_find_are_kept_outside_it() -> None:
    text = "\u200bmail jane@example.com\u200b, then \uff21\uff22 words"
    out = Redactor().text(text)
    assert out == "\u200bmail [REDACTED:EMAIL]\u200b, then \uff21\uff22 words"


def test_case_and_run_ids_carrying_pii_become_pseudonyms() -> None:
    event = pb.Traffic(query="q", actual_response="a")
    event.meta.app = "nutrition"
    event.meta.case_id = "case-for-jane@example.com"
    event.meta.run_id = "run 4111 1111 1111 1111"
    redacted, counts = Redactor().traffic(event)
    assert "jane" not in redacted.meta.case_id
    assert redacted.meta.case_id.startswith("case-")
    assert "4111" not in redacted.meta.run_id
    assert redacted.meta.run_id.startswith("run-")
    assert (counts["CASE_ID"], counts["RUN_ID"]) == (1, 1)
    again, _ = Redactor().traffic(event)
    assert again.meta.case_id == redacted.meta.case_id  # stable: dedup by case id still works


def test_ids_reag_made_are_left_alone_even_when_their_hex_is_all_digits() -> None:
    event = pb.Traffic(query="q", actual_response="a")
    event.meta.app = "nutrition"
    event.meta.case_id = "nutrition-4111111111111111"  # case_id_for's shape, digits only
    event.meta.run_id = "run-123456789012"  # new_run_id's shape
    event.profile.user_id = "user-4111111111111111"  # a pseudonym, seen again at a later hop
    redacted, counts = Redactor().traffic(event)
    assert redacted.meta.case_id == event.meta.case_id
    assert redacted.meta.run_id == event.meta.run_id
    assert redacted.profile.user_id == event.profile.user_id
    assert not counts
    event.meta.case_id = "other-4111111111111111"  # not this app's shape: scanned
    assert Redactor().traffic(event)[0].meta.case_id.startswith("case-")


def test_date_of_birth_attribute_is_redacted_other_dates_stay() -> None:
    event = pb.Traffic(query="q", actual_response="a")
    event.profile.attributes["date_of_birth"] = "1985-03-12"
    event.profile.attributes["DOB"] = "12 March 1985"
    event.profile.attributes["member_since"] = "2019-05-01"
    redacted, _ = Redactor().traffic(event)
    attributes = dict(redacted.profile.attributes)
    assert attributes["date_of_birth"] == "[REDACTED:DOB]"
    assert attributes["DOB"] == "[REDACTED:DOB]"
    assert attributes["member_since"] == "2019-05-01"


def test_pseudonyms_are_keyed_not_a_bare_hash() -> None:
    user = "jane@example.com"
    a = Redactor(pseudonym_key=b"key-a").user_id(user)
    assert a == Redactor(pseudonym_key=b"key-a").user_id(user)
    assert a != Redactor(pseudonym_key=b"key-b").user_id(user)
    assert a != "user-" + hashlib.sha256(user.encode()).hexdigest()[:16]


def test_pseudonym_key_comes_from_settings_else_a_stored_one(tmp_path: Path) -> None:
    configured = ReagSettings(state_dir=tmp_path, pseudonym_key=SecretStr("s3cret"))
    assert pseudonym_key(configured) == b"s3cret"
    local = ReagSettings(state_dir=tmp_path / "stack")
    first = pseudonym_key(local)
    assert len(first) >= 32
    assert pseudonym_key(ReagSettings(state_dir=tmp_path / "stack")) == first
    assert pseudonym_key(ReagSettings(state_dir=tmp_path / "other")) != first
    assert (tmp_path / "stack" / "pseudonym.key").stat().st_mode & 0o077 == 0


@pytest.mark.parametrize(
    "data",
    [
        b"\x12\x05card 4" + b"\x001" * 15,  # UTF-16-like: a NUL between the digits
        b"\x0a\x03card 4111\xff1111\xfe1111\xff1111 \x80",
        "card 4111\u200b1111 1111 1111".encode() + b"\xc3",
    ],
)
def test_undecodable_bytes_cannot_hide_a_card(data: bytes) -> None:
    out = redact_bytes(data)
    assert b"[REDACTED:CARD]" in out
    assert b"1111" not in out.replace(b"\x00", b"")


def test_undecodable_bytes_without_pii_come_back_unchanged() -> None:
    data = b"\x0a\x05hello\xff\xfe\x00 nothing here"
    assert redact_bytes(data) is data


def test_oversized_bytes_are_cut_before_any_pattern_runs() -> None:
    card = b"4111 1111 1111 1111 "
    data = card * (3 * MIB // len(card))  # 3 MiB, a dead letter of an oversized event
    with within_cpu("scrubbing 3 MiB cut to 1 MiB"):
        out = redact_bytes(data, max_bytes=MIB)
    assert len(out) <= MIB
    assert b"1111 1111" not in out
    assert out.startswith(b"[REDACTED:CARD]")
