"""WordNet for METEOR's synonym stage, read offline from Debian's ``wordnet-base``.

The package installs the WordNet 3.0 database at ``/usr/share/wordnet`` but
not its ``lexnames`` file (the list of the 45 lexicographer file names, which
is fixed by the WordNet 3.0 format, see lexnames(5WN)); nltk's reader insists
on it, so this reader serves it from the table below, and skips the mapping
to nltk's downloadable WordNet copy (used only for multilingual data). Nothing
is downloaded.
"""

from __future__ import annotations

import io
import warnings
from functools import cache
from pathlib import Path
from typing import IO, Any

from reag.drafting.errors import MetricUnavailableError

WORDNET_DIR = Path("/usr/share/wordnet")

# (file number, name, syntactic category: 1 noun, 2 verb, 3 adjective, 4 adverb)
_LEXNAMES: tuple[str, ...] = (
    "adj.all",
    "adj.pert",
    "adv.all",
    "noun.Tops",
    "noun.act",
    "noun.animal",
    "noun.artifact",
    "noun.attribute",
    "noun.body",
    "noun.cognition",
    "noun.communication",
    "noun.event",
    "noun.feeling",
    "noun.food",
    "noun.group",
    "noun.location",
    "noun.motive",
    "noun.object",
    "noun.person",
    "noun.phenomenon",
    "noun.plant",
    "noun.possession",
    "noun.process",
    "noun.quantity",
    "noun.relation",
    "noun.shape",
    "noun.state",
    "noun.substance",
    "noun.time",
    "verb.body",
    "verb.change",
    "verb.cognition",
    "verb.communication",
    "verb.competition",
    "verb.consumption",
    "verb.contact",
    "verb.creation",
    "verb.emotion",
    "verb.motion",
    "verb.perception",
    "verb.possession",
    "verb.social",
    "verb.stative",
    "verb.weather",
    "adj.ppl",
)
_CATEGORY = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}


def lexnames_text() -> str:
    return "".join(
        f"{i:02d}\t{name}\t{_CATEGORY[name.split('.')[0]]}\n" for i, name in enumerate(_LEXNAMES)
    )


@cache
def load_wordnet(root: Path = WORDNET_DIR) -> Any:
    """An nltk ``WordNetCorpusReader`` over ``root``; raises ``MetricUnavailableError`` with the
    install command when the database is not there."""
    if not (root / "data.noun").is_file():
        raise MetricUnavailableError(
            f"WordNet database not found at {root}: install Debian's wordnet-base "
            "(apt-get install wordnet-base)"
        )
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    # nltk only reads corpora from directories on its data path.
    if str(root) not in nltk.data.path:
        nltk.data.path.append(str(root))

    class _Reader(WordNetCorpusReader):  # type: ignore[misc]
        def open(self, file: str) -> IO[str]:
            if file == "lexnames" and not (root / "lexnames").is_file():
                return io.StringIO(lexnames_text())
            return super().open(file)  # type: ignore[no-any-return]

        def map_wn(self, version: str = "wordnet") -> None:
            # The mapping to nltk's own WordNet copy serves multilingual data only.
            return None

    with warnings.catch_warnings():
        # "multilingual functions are not available": we need English synonyms only.
        warnings.simplefilter("ignore", UserWarning)
        return _Reader(str(root), None)
