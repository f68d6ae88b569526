"""A sentence-pair file translated by a plain PyTorch encoder-decoder, as PyTorch's tutorials write one ("NLP From
Scratch: Translation with a Sequence to Sequence Network"), without attention, batched: the encoder's last state
starts the decoder, which is trained with teacher forcing; the outputs are decoded greedily.

Its data (pairs_data.py, shared with keras_pairs.py): two files of `source<TAB>target` lines (train and test);
words and single punctuation marks, lowercased.
Its model: `nn.Embedding(32)` → `nn.GRU(64)` over the packed sources → its last state → `nn.GRU(64)` over the
target's embeddings → `nn.Linear`; cross-entropy that ignores the padding, Adam 0.005 with gradients clipped to
norm 1, batch 32, shuffled, on the GPU when there is one. PyTorch's defaults for threads.

    python benchmarks/plain_scripts/pytorch_pairs.py train.tsv test.tsv --epochs 20

The last line printed is JSON: the share of test sources whose greedy output is their target exactly.
"""

import argparse
import json

import torch
from pairs_data import END, PAD, START, GreedyOutputs, Vocabularies, read
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_sequence
from torch.utils.data import DataLoader


class Translator(nn.Module):
    def __init__(self, sources, targets, embedding=32, units=64):
        super().__init__()
        self.source_embedding = nn.Embedding(sources, embedding, padding_idx=PAD)
        self.encoder = nn.GRU(embedding, units, batch_first=True)
        self.target_embedding = nn.Embedding(targets, embedding, padding_idx=PAD)
        self.decoder = nn.GRU(embedding, units, batch_first=True)
        self.output = nn.Linear(units, targets)

    def encode(self, source, lengths):
        packed = pack_padded_sequence(self.source_embedding(source), lengths, batch_first=True, enforce_sorted=False)
        return self.encoder(packed)[1]

    def decode(self, target_input, state):
        decoded, state = self.decoder(self.target_embedding(target_input), state)
        return self.output(decoded), state


def batch(rows):
    sources, targets = zip(*rows)
    lengths = torch.tensor([len(s) for s in sources])
    targets = [torch.tensor(t) for t in targets]
    return (pad_sequence([torch.tensor(s) for s in sources], batch_first=True), lengths,
            pad_sequence([torch.cat([torch.tensor([START]), t]) for t in targets], batch_first=True),
            pad_sequence([torch.cat([t, torch.tensor([END])]) for t in targets], batch_first=True))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("train")
    parser.add_argument("test")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    train, test = read(args.train), read(args.test)
    vocabularies = Vocabularies(train)
    examples = [(vocabularies.source_ids(s), vocabularies.target_ids(t)) for s, t in train]
    loader = DataLoader(examples, batch_size=32, shuffle=True, collate_fn=batch)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = Translator(vocabularies.source_size, len(vocabularies.target_words)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.005)
    loss_function = nn.CrossEntropyLoss(ignore_index=PAD)
    for epoch in range(args.epochs):
        model.train()
        for source, lengths, target_input, target_output in loader:
            optimizer.zero_grad()
            logits, _ = model.decode(target_input.to(device), model.encode(source.to(device), lengths))
            loss = loss_function(logits.flatten(0, 1), target_output.to(device).reshape(-1))
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        print(f"epoch {epoch + 1}: loss {loss.item():.4f}")

    model.eval()
    sources = [vocabularies.source_ids(s) for s, _ in test]
    with torch.no_grad():
        source = pad_sequence([torch.tensor(s) for s in sources], batch_first=True).to(device)
        state = model.encode(source, torch.tensor([len(s) for s in sources]))
        token = torch.full((len(test), 1), START, device=device)
        outputs = GreedyOutputs(test, vocabularies.target_words)
        for _ in range(outputs.steps):
            logits, state = model.decode(token, state)
            token = logits[:, -1].argmax(-1, keepdim=True)
            if outputs.add(token[:, 0].tolist()):
                break
    print(json.dumps({"accuracy": float(outputs.exact_match())}))


if __name__ == "__main__":
    main()
