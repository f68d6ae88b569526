"""Keras's addition example written in plain PyTorch, as PyTorch's tutorials write a model and its loop.

The data as the Keras example makes it (addition_data.py: reversed questions padded to 7 characters, answers to 4,
one-hot; 45,000 to train, 5,000 unseen to test); the model as its: an `nn.LSTM(128)` encoder whose last state is
repeated 4 times into an `nn.LSTM(128)` decoder, an `nn.Linear` per position; cross-entropy, Adam, batch 32,
shuffled, on the GPU when there is one. PyTorch's defaults for threads.

    python benchmarks/plain_scripts/pytorch_addition.py --epochs 3

The last line printed is JSON: the per-character test accuracy (the example's accuracy).
"""

import argparse
import json

import torch
from addition_data import CHARS, DIGITS, questions
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Adder(nn.Module):
    def __init__(self, characters, units=128):
        super().__init__()
        self.encoder = nn.LSTM(characters, units, batch_first=True)
        self.decoder = nn.LSTM(units, units, batch_first=True)
        self.output = nn.Linear(units, characters)

    def forward(self, questions):
        _, (state, _) = self.encoder(questions)
        repeated = state[-1].unsqueeze(1).repeat(1, DIGITS + 1, 1)
        decoded, _ = self.decoder(repeated)
        return self.output(decoded)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=29)
    parser.add_argument("--train", type=int, default=45000)
    parser.add_argument("--test", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    chars = CHARS
    index = {c: i for i, c in enumerate(chars)}
    pairs = questions(args.train + args.test, args.seed)
    x = nn.functional.one_hot(torch.tensor([[index[c] for c in q] for q, _ in pairs]), len(chars)).float()
    y = torch.tensor([[index[c] for c in a] for _, a in pairs])
    train = DataLoader(TensorDataset(x[:args.train], y[:args.train]), batch_size=32, shuffle=True)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = Adder(len(chars)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_function = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        model.train()
        for questions_, answers in train:
            optimizer.zero_grad()
            logits = model(questions_.to(device))
            loss = loss_function(logits.reshape(-1, len(chars)), answers.to(device).reshape(-1))
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch + 1}: loss {loss.item():.4f}")
    model.eval()
    with torch.no_grad():
        accuracy = (model(x[args.train:].to(device)).argmax(-1).cpu() == y[args.train:]).float().mean().item()
    print(json.dumps({"accuracy": accuracy}))


if __name__ == "__main__":
    main()
