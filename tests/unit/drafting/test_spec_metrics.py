"""The cheap metrics equal their libraries' own values; a metric that cannot run says why.

BERTScore and Sentence-BERT load a model: their equality tests live in
tests/integration/drafting/.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from nltk.tokenize import wordpunct_tokenize
from nltk.translate.meteor_score import meteor_score
from rouge_score import rouge_scorer
from sacrebleu.metrics.bleu import BLEU

from reag.drafting.metrics import Bleu1, Meteor, RougeL, score_pairs
from reag.drafting.wordnet import WORDNET_DIR, lexnames_text, load_wordnet

GENERATED = (
    "The system shall show the score card within 3 seconds of the photo. "
    "The app shall flag sugar above 22.5 g per 100 g as high."
)
REFERENCE = (
    "The score card must be displayed within three seconds after the user takes the photo. "
    "Sugar above 22.5 g per 100 g is rated high (red)."
)
PAIR = (GENERATED, REFERENCE)

needs_wordnet = pytest.mark.skipif(
    not (WORDNET_DIR / "data.noun").is_file(),
    reason="Debian's wordnet-base is not installed (apt-get install wordnet-base)",
)


def words(text: str) -> list[str]:
    return [t.lower() for t in wordpunct_tokenize(text)]


@needs_wordnet
def test_meteor_equals_nltk() -> None:
    [result] = Meteor().score([PAIR])
    expected = meteor_score([words(REFERENCE)], words(GENERATED), wordnet=load_wordnet())
    assert result.value == pytest.approx(expected, abs=1e-12)
    assert 0 < expected < 1
    assert result.settings["wordnet"].startswith("WordNet 3.0 at /usr/share/wordnet")


@needs_wordnet
def test_meteor_uses_wordnet_synonyms() -> None:
    class NoSynonyms:
        def synsets(self, _word: str) -> list[object]:
            return []

    gen, ref = "the tag displays the sugar", "the label shows the sugar"
    with_wordnet = Meteor().score([(gen, ref)])[0].value
    without = meteor_score([ref.split()], gen.split(), wordnet=NoSynonyms())
    assert with_wordnet is not None
    assert with_wordnet > without + 0.3


def test_lexnames_table_matches_the_wordnet_format() -> None:
    lines = lexnames_text().splitlines()
    assert len(lines) == 45
    assert lines[0] == "00\tadj.all\t3"
    assert lines[13] == "13\tnoun.food\t1"
    assert lines[44] == "44\tadj.ppl\t3"


def test_rouge_l_equals_rouge_score() -> None:
    [result] = RougeL().score([PAIR])
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    expected = scorer.score(REFERENCE, GENERATED)["rougeL"].fmeasure
    assert result.value == pytest.approx(expected, abs=1e-12)
    assert 0 < expected < 1


def test_bleu_1_equals_sacrebleu() -> None:
    [result] = Bleu1().score([PAIR])
    bleu = BLEU(max_ngram_order=1, effective_order=True)
    expected = bleu.sentence_score(GENERATED, [REFERENCE]).score / 100
    assert result.value == pytest.approx(expected, abs=1e-12)
    assert 0 < expected < 1
    assert "tok:13a" in result.settings["signature"]


def test_missing_wordnet_gives_a_reason_not_a_number(tmp_path: Path) -> None:
    results = score_pairs([Meteor(wordnet_dir=tmp_path), RougeL()], [PAIR, PAIR])
    assert [r.value for r in results["meteor"]] == [None, None]
    assert "apt-get install wordnet-base" in str(results["meteor"][0].error)
    assert results["meteor"][0].as_dict()["settings"]["alpha"] == 0.9
    assert all(r.value is not None for r in results["rouge_l"])
