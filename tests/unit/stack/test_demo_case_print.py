"""The demo's case print shows what was judged: the app's response, clipped, and for each
criterion the documents it came from (issue 24, item 5)."""

from __future__ import annotations

from reag.v1 import events_pb2 as pb
from shell.demo import CaseWatch, _print_case


def test_the_case_print_shows_the_response_and_each_criterions_source() -> None:
    traffic = pb.Traffic(query="Can I have the pesto?")
    traffic.meta.case_id = "nutrition-1"
    oracle = pb.Oracle(
        test_objective="Check the allergy advice.",
        criteria=[
            pb.Criterion(
                criterion_id="nutrition-1/c0",
                index=0,
                text="PASS if the response states that the pesto contains cashews.",
                source_doc_ids=["requirement/FR-3", "persona/PER-2"],
            ),
            pb.Criterion(criterion_id="nutrition-1/c1", index=1, text="PASS if old-style."),
        ],
    )
    oracle.interpretation.intention.actual_response = "Call emergency services now. " + "x" * 600
    lines: list[str] = []
    _print_case(1, CaseWatch(traffic, oracle=oracle), lines.append)
    response = next(line for line in lines if line.startswith("  response : "))
    assert response.startswith("  response : Call emergency services now.")
    assert response.endswith("…")
    assert len(response) < 420
    at = lines.index("    [0] PASS if the response states that the pesto contains cashews.")
    assert lines[at + 1] == "        from requirement/FR-3, persona/PER-2"
    assert "        from (no document cited)" in lines
