"""Scoring progress: one bar per tier with done/total, on stderr; nothing when disabled."""

from __future__ import annotations

import pytest

from shell.progress import tier_bars


def test_each_tier_gets_a_bar_with_its_count(capsys: pytest.CaptureFixture[str]) -> None:
    with tier_bars(label="scoring") as report:
        report(1, 3, 10)
        report(2, 1, 4)
        report(1, 10, 10)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "scoring tier 1" in captured.err
    assert "10/10" in captured.err
    assert "1/4" in captured.err


def test_a_disabled_bar_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with tier_bars(enabled=False) as report:
        report(1, 3, 10)
    assert capsys.readouterr() == ("", "")
