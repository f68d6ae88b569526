"""Sentence polarity in plain PyTorch, written as PyTorch's own tutorials write it.

The script a PyTorch user writes for a file of labelled sentences: a vocabulary of the training words (lowercase,
punctuation stripped, split on spaces), a `DataLoader` whose collate function pads each batch to its longest,
`nn.Embedding` → `nn.LSTM` over the packed batch (`pack_padded_sequence`, so padding is not read) → `nn.Linear`,
cross-entropy, Adam, one optimizer step per batch, on the GPU when there is one. PyTorch's defaults for threads.
benchmarks/plain_scripts.py runs it as a process of its own on the files it writes, as a user runs a script.

    python benchmarks/plain_scripts/pytorch_sentiment.py train.tsv test.tsv --epochs 3

Each file: a header naming the columns `text` and `label`, then one tab-separated line per sentence. The last
line printed is JSON: the test accuracy.
"""

import argparse
import csv
import json
import re
import string

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_sequence
from torch.utils.data import DataLoader

PUNCTUATION = re.compile(f"[{re.escape(string.punctuation)}]")


def read(path):
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    return [PUNCTUATION.sub("", row["text"].lower()).split() for row in rows], [row["label"] for row in rows]


class Classifier(nn.Module):
    def __init__(self, vocabulary_size, units, classes):
        super().__init__()
        self.embedding = nn.Embedding(vocabulary_size, units, padding_idx=0)
        self.lstm = nn.LSTM(units, units, batch_first=True)
        self.output = nn.Linear(units, classes)

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(self.embedding(tokens), lengths, batch_first=True, enforce_sorted=False)
        _, (state, _) = self.lstm(packed)
        return self.output(state[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("train")
    parser.add_argument("test")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--units", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)

    train_words, train_labels = read(args.train)
    test_words, test_labels = read(args.test)
    classes = sorted(set(train_labels))
    vocabulary = {"<pad>": 0, "<unk>": 1}
    for words in train_words:
        for word in words:
            vocabulary.setdefault(word, len(vocabulary))

    def examples(sentences, labels):
        # An empty sentence (all punctuation) reads one <unk>: pack_padded_sequence refuses length 0.
        return [(torch.tensor([vocabulary.get(w, 1) for w in words] or [1]), classes.index(label))
                for words, label in zip(sentences, labels)]

    def collate(batch):
        tokens = [ids for ids, _ in batch]
        return (pad_sequence(tokens, batch_first=True), torch.tensor([len(ids) for ids in tokens]),
                torch.tensor([label for _, label in batch]))

    train = DataLoader(examples(train_words, train_labels), batch_size=args.batch_size, shuffle=True,
                       collate_fn=collate)
    test = DataLoader(examples(test_words, test_labels), batch_size=args.batch_size, collate_fn=collate)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = Classifier(len(vocabulary), args.units, len(classes)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_function = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        model.train()
        for tokens, lengths, labels in train:
            optimizer.zero_grad()
            loss = loss_function(model(tokens.to(device), lengths), labels.to(device))
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch + 1}: loss {loss.item():.4f}")
    model.eval()
    correct = 0
    with torch.no_grad():
        for tokens, lengths, labels in test:
            correct += (model(tokens.to(device), lengths).argmax(dim=1).cpu() == labels).sum().item()
    print(json.dumps({"accuracy": correct / len(test.dataset)}))


if __name__ == "__main__":
    main()
