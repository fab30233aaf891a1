"""BERTScore F1 and Sentence-BERT cosine equal their libraries' own values, offline."""

from __future__ import annotations

import pytest
from bert_score import score as bert_score
from sentence_transformers import SentenceTransformer
from sentence_transformers.util import cos_sim

from reag.drafting.metrics import BertScoreF1, SbertCosine, minilm_dir

pytestmark = pytest.mark.slow

GENERATED = (
    "The system shall show the score card within 3 seconds of the photo. "
    "The app shall flag sugar above 22.5 g per 100 g as high."
)
REFERENCE = (
    "The score card must be displayed within three seconds after the user takes the photo. "
    "Sugar above 22.5 g per 100 g is rated high (red)."
)


def test_bertscore_f1_equals_bert_score_on_minilm_layer_6() -> None:
    [result] = BertScoreF1().score([(GENERATED, REFERENCE)])
    _, _, f1 = bert_score(
        [GENERATED], [REFERENCE], model_type=str(minilm_dir()), num_layers=6, device="cpu"
    )
    assert result.value == pytest.approx(float(f1[0]), abs=1e-6)
    assert 0 < float(f1[0]) < 1
    assert result.settings["num_layers"] == 6
    assert "layer 6 of 6" in result.settings["layer_used"]
    assert result.notes == []


def test_sbert_cosine_equals_sentence_transformers() -> None:
    [result] = SbertCosine().score([(GENERATED, REFERENCE)])
    model = SentenceTransformer(str(minilm_dir()), device="cpu")
    gen, ref = model.encode([GENERATED, REFERENCE], convert_to_tensor=True)
    expected = float(cos_sim(gen, ref).item())
    assert result.value == pytest.approx(expected, abs=1e-5)
    assert 0 < expected < 1


def test_long_text_is_scored_and_its_truncation_reported() -> None:
    long_text = " ".join(["The system shall record every scan with its timestamp."] * 80)
    [bert] = BertScoreF1().score([(long_text, REFERENCE)])
    [sbert] = SbertCosine().score([(long_text, REFERENCE)])
    assert bert.value is not None
    assert sbert.value is not None
    assert any("read the first 512" in note for note in bert.notes)
    assert any("read the first 256" in note for note in sbert.notes)
