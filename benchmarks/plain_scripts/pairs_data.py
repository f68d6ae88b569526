"""The data side of the two sentence-pair scripts, shared so that both read, number and score the pairs alike:
`source<TAB>target` lines cut into words and single punctuation marks, lowercased; one vocabulary per side
learnt from the training pairs; greedy outputs gathered until each writes its end token, scored by exact
match (the output's words are the target's)."""

import re

TOKEN = re.compile(r"\w+|[^\w\s]")
PAD, UNKNOWN, START, END = 0, 1, 1, 2  # a source id 1 is an unknown word; a target id 1 is the start token


def read(path):
    """(source words, target words) per line of a `source<TAB>target` file."""
    with open(path, encoding="utf-8") as handle:
        fields = [line.rstrip("\n").split("\t") for line in handle if line.strip()]
    return [(TOKEN.findall(source.lower()), TOKEN.findall(target.lower())) for source, target in fields]


class Vocabularies:
    """Each side's words → ids, from the training pairs: 0 pads both; 1 is a source's unknown word and the
    target's start; 2 the target's end."""

    def __init__(self, train):
        self.source_index = {w: i + 2 for i, w in enumerate(sorted({w for s, _ in train for w in s}))}
        self.target_words = ["", "<s>", "</s>", *sorted({w for _, t in train for w in t})]
        self.target_index = {w: i for i, w in enumerate(self.target_words)}
        self.source_size = len(self.source_index) + 2

    def source_ids(self, words):
        return [self.source_index.get(w, UNKNOWN) for w in words]

    def target_ids(self, words):
        return [self.target_index[w] for w in words]


class GreedyOutputs:
    """Each test source's output words, step by step, until it writes the end token."""

    def __init__(self, test, target_words):
        self.test, self.target_words = test, target_words
        self.words = [[] for _ in test]
        self.done = [False] * len(test)
        self.steps = max(len(t) for _, t in test) + 2  # the longest target, its end and one more

    def add(self, chosen):
        """The ids each row chose at this step; True once every row has ended."""
        for row, token in enumerate(chosen):
            if not self.done[row]:
                self.done[row] = token == END
                if not self.done[row]:
                    self.words[row].append(self.target_words[token])
        return all(self.done)

    def exact_match(self):
        return sum(words == target for words, (_, target) in zip(self.words, self.test)) / len(self.test)
