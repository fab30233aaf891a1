"""Small versions of ``make chaos``: every reag process on its own, on the real embedded
broker and the scripted model (``bench.chaos``). The load run: 200 cases each end as exactly
one result or dead letter, none doubled in the ledger; the kill run: the ledger killed with
SIGKILL mid-stream and restarted loses and doubles nothing. BM25 ranking keeps them short
(the full runs rank with ICRALM on the scripted model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.chaos import kill, load

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


async def test_200_cases_end_once_each(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = load.parse(["--cases", "200", "--kernel", "bm25", "--timeout", "400"])
    code = await load.load(args, tmp_path)
    out = capsys.readouterr().out
    assert "cases in 200, out 200 (200 results, 0 dead letters), missing 0, doubled 0" in out, out
    assert code == 0, out


async def test_a_ledger_killed_mid_stream_loses_and_doubles_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = kill.parse(["--services", "ledger", "--cases", "30", "--kernel", "bm25", "--seed", "3"])
    code = await kill.chaos(args, tmp_path)
    out = capsys.readouterr().out
    (row,) = [line.split() for line in out.splitlines() if line.strip().startswith("ledger ")]
    cases_in, cases_out = row[1:3]
    missing, doubled = row[5:7]
    assert (cases_in, cases_out, missing, doubled) == ("30", "30", "0", "0"), out
    assert code == 0, out
