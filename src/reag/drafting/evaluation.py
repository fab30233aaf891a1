"""``reag spec eval``: a generated SRS against a reference, whole and per top-level section.

Both files may be Markdown with numbered headings or the corpus CSV. Only the
section bodies are compared, never the headings: two documents on the same
template share every heading, which would lift every score by the same
amount whatever the content. Sections are matched by their top-level number.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reag.drafting.document import (
    csv_top_level_texts,
    is_blank,
    parse_markdown_sections,
    read_csv_rows,
    top_level_texts,
)
from reag.drafting.errors import DocumentFormatError
from reag.drafting.metrics import Metric, MetricResult, Pair, score_pairs

COMPARED_TEXT = "section bodies in document order, headings excluded"


@dataclass(frozen=True, slots=True)
class SpecText:
    whole: str
    sections: dict[str, tuple[str, str]]  # top-level number → (label, body text)


def read_spec_text(path: Path) -> SpecText:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DocumentFormatError(f"cannot read {path}: {exc.strerror}") from exc
    if path.suffix.lower() == ".csv":
        sections = csv_top_level_texts(read_csv_rows(text, str(path)))
    else:
        sections = top_level_texts(parse_markdown_sections(text))
    if not sections:
        # No numbered headings: the whole file is one unsectioned document.
        return SpecText(text.strip(), {})
    whole = "\n\n".join(body for _, body in sections.values() if not is_blank(body))
    return SpecText(whole, sections)


def _blank_reason(pair: Pair) -> str | None:
    if is_blank(pair[0]):
        return "the generated text is empty"
    if is_blank(pair[1]):
        return "the reference text is empty"
    return None


def compare(generated: SpecText, reference: SpecText, metrics: Sequence[Metric]) -> dict[str, Any]:
    """Every metric on the whole documents and on each top-level section both have."""
    shared = [n for n in reference.sections if n in generated.sections]
    pairs: list[Pair] = [(generated.whole, reference.whole)]
    pairs += [(generated.sections[n][1], reference.sections[n][1]) for n in shared]
    runnable = [i for i, pair in enumerate(pairs) if _blank_reason(pair) is None]
    scored = score_pairs(metrics, [pairs[i] for i in runnable])

    def results_for(index: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        reason = _blank_reason(pairs[index])
        for metric in metrics:
            if reason is not None:
                result = MetricResult(metric.name, None, metric.settings(), error=reason)
            else:
                result = scored[metric.name][runnable.index(index)]
            out[metric.name] = result.as_dict()
        return out

    return {
        "compared_text": COMPARED_TEXT,
        "document": results_for(0),
        "sections": [
            {
                "number": number,
                "generated": generated.sections[number][0],
                "reference": reference.sections[number][0],
                "metrics": results_for(i),
            }
            for i, number in enumerate(shared, start=1)
        ],
        "unmatched": {
            "only_generated": [
                generated.sections[n][0] for n in generated.sections if n not in shared
            ],
            "only_reference": [
                reference.sections[n][0] for n in reference.sections if n not in shared
            ],
        },
    }
