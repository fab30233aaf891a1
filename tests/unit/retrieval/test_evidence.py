from __future__ import annotations

from reag.retrieval.evidence import locate, normalise

DOC = (
    "Salt is derived from sodium as salt (g) = sodium (g) × 2.5. "
    "Foods per 100 g: low at 0.3 g salt or less, high above 1.5 g.\n"
    "High gives a red **High Salt** badge."
)


def test_verbatim_sentence_is_kept_as_cited() -> None:
    claim = "High gives a red High Salt badge."
    assert locate(claim, DOC) == claim


def test_case_quotes_and_spacing_do_not_matter() -> None:
    assert locate("  FOODS per 100 g:   low at 0.3 g salt or less ", DOC) is not None
    assert normalise("“High” — badge") == normalise('"high" - badge')


def test_a_near_copy_is_replaced_by_the_documents_own_sentence() -> None:
    claim = "Foods per 100g: low at 0.3 g salt or less, high above 1.5 g."
    assert locate(claim, DOC) == "Foods per 100 g: low at 0.3 g salt or less, high above 1.5 g."


def test_fabricated_and_paraphrased_sentences_are_rejected() -> None:
    assert locate("Sugar above 22.5 g per 100 g gets a red badge.", DOC) is None
    assert locate("Salty foods are flagged when they exceed 1.5 grams.", DOC) is None


def test_fragments_too_short_to_be_evidence_are_rejected() -> None:
    assert locate("salt", DOC) is None
