"""Keras's addition example ("Sequence to sequence learning for performing number addition", addition_rnn.py in
keras-io), as that example writes it, for a number of epochs.

Its data (addition_data.py): reversed questions of 7 characters, answers of 4, one-hot characters; 45,000 to
train, 5,000 unseen to test. Its model: LSTM(128) → RepeatVector(4) → LSTM(128) → a softmax per position; Adam,
batch 32. The backend is Keras's (`KERAS_BACKEND`),
with its defaults for threads. benchmarks/plain_scripts.py runs it as a process of its own, as a user runs it.

    KERAS_BACKEND=jax python benchmarks/plain_scripts/keras_addition.py --epochs 3

The last line printed is JSON: the per-character test accuracy (the example's accuracy).
"""

import argparse
import json

import keras
import numpy as np
from addition_data import CHARS, DIGITS, MAXLEN, questions


class CharacterTable:
    def __init__(self, chars):
        self.chars = sorted(set(chars))
        self.char_indices = {c: i for i, c in enumerate(self.chars)}

    def encode(self, text, rows):
        x = np.zeros((rows, len(self.chars)))
        for i, c in enumerate(text):
            x[i, self.char_indices[c]] = 1
        return x


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=29)
    parser.add_argument("--train", type=int, default=45000)
    parser.add_argument("--test", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    keras.utils.set_random_seed(args.seed)
    table = CharacterTable(CHARS)
    pairs = questions(args.train + args.test, args.seed)
    x = np.array([table.encode(q, MAXLEN) for q, _ in pairs], dtype="float32")
    y = np.array([table.encode(a, DIGITS + 1) for _, a in pairs], dtype="float32")
    x_train, y_train, x_test, y_test = x[:args.train], y[:args.train], x[args.train:], y[args.train:]

    model = keras.Sequential([
        keras.Input((MAXLEN, len(table.chars))),
        keras.layers.LSTM(128),
        keras.layers.RepeatVector(DIGITS + 1),
        keras.layers.LSTM(128, return_sequences=True),
        keras.layers.Dense(len(table.chars), activation="softmax"),
    ])
    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    model.fit(x_train, y_train, batch_size=32, epochs=args.epochs, verbose=2)
    _, accuracy = model.evaluate(x_test, y_test, batch_size=32, verbose=0)
    print(json.dumps({"accuracy": float(accuracy)}))


if __name__ == "__main__":
    main()
