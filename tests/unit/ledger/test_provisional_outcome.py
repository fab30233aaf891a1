"""A provisional verdict marks the outcome it decides, and the gate does not count it by default."""

from __future__ import annotations

from reag.ledger.formatting import criterion_status, format_table, markdown_report
from reag.ledger.gate import evaluate_gate
from reag.ledger.outcome import CaseEvents, build_result
from reag.v1 import events_pb2 as pb

from .conftest import NO, YES, Events


def case(ev: Events, labels: list[tuple[pb.Label.ValueType, bool]]) -> pb.Result:
    """A complete case: one verdict per (label, provisional)."""
    events = CaseEvents(case_id=ev.case_id, meta=ev.meta(), oracle=ev.oracle())
    for index, (label, provisional) in enumerate(labels):
        verdict = ev.verdict(index, label)
        verdict.provisional = provisional
        events.verdicts[ev.cid(index)] = verdict
    events.n_criteria = ev.n
    return build_result(events)


def test_a_pass_that_rests_on_a_provisional_verdict_is_provisional() -> None:
    ev = Events(n=2)
    result = case(ev, [(YES, False), (YES, True)])
    assert result.outcome == pb.OUTCOME_PASS
    assert result.provisional
    by_id = {c.criterion.criterion_id: c for c in result.criteria}
    assert by_id[ev.cid(1)].provisional
    assert not by_id[ev.cid(0)].provisional
    assert criterion_status(by_id[ev.cid(1)]) == "accepted, provisional"
    assert not case(ev, [(YES, False), (YES, False)]).provisional


def test_a_fail_stands_firm_when_a_certified_no_decides_it_too() -> None:
    ev = Events(n=2)
    assert not case(ev, [(NO, False), (NO, True)]).provisional
    only_provisional = case(ev, [(YES, False), (NO, True)])
    assert only_provisional.outcome == pb.OUTCOME_FAIL
    assert only_provisional.provisional


def test_the_gate_counts_provisional_outcomes_as_abstained_unless_asked() -> None:
    ev = Events(n=1)
    firm_pass = case(ev, [(YES, False)])
    provisional_fail = case(ev, [(NO, True)])
    provisional_pass = case(ev, [(YES, True)])
    results = [firm_pass, provisional_fail, provisional_pass, firm_pass]
    strict = evaluate_gate(results, max_fail_rate=0.0, max_abstain_rate=1.0)
    assert (strict.failed, strict.abstained, strict.provisional) == (0, 2, 2)
    assert strict.passed
    counted = evaluate_gate(
        results, max_fail_rate=0.0, max_abstain_rate=1.0, count_provisional=True
    )
    assert (counted.failed, counted.abstained) == (1, 0)
    assert not counted.passed


def test_listings_say_provisional() -> None:
    ev = Events(n=1)
    result = case(ev, [(YES, True)])
    assert "PASS (provisional)" in format_table([result])
    assert "PASS (provisional)" in markdown_report([result])


def test_the_html_report_marks_provisional_cases_and_criteria() -> None:
    from reag.report.html import ReportInputs, render_run_report

    ev = Events(n=2)
    page = render_run_report(ReportInputs(results=[case(ev, [(YES, False), (YES, True)])]))
    assert 'data-provisional="true"' in page
    assert page.count('class="provisional') == 2  # the case's badge and one criterion's
    firm = render_run_report(ReportInputs(results=[case(ev, [(YES, False), (YES, False)])]))
    assert 'data-provisional="false"' in firm
    assert 'class="provisional' not in firm
