"""Sentence polarity in plain Keras, written as Keras's own text-classification examples write it.

The script a Keras user writes for a file of labelled sentences: `TextVectorization` adapted on the training
texts (lowercase, punctuation stripped, split on spaces), every text padded to the longest, an `Embedding` that
masks the padding, one recurrent layer, a softmax over the classes, Adam, `fit` and `evaluate`. The backend is
Keras's (`KERAS_BACKEND`), with its own defaults for threads. benchmarks/plain_scripts.py runs it as a process of
its own on the files it writes, as a user runs a script.

    KERAS_BACKEND=jax python benchmarks/plain_scripts/keras_sentiment.py train.tsv test.tsv --epochs 3

Each file: a header naming the columns `text` and `label`, then one tab-separated line per sentence. The last
line printed is JSON: the test accuracy.
"""

import argparse
import csv
import json

import keras
import numpy as np


def read(path):
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    return [row["text"] for row in rows], [row["label"] for row in rows]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("train")
    parser.add_argument("test")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--units", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    keras.utils.set_random_seed(args.seed)

    train_texts, train_labels = read(args.train)
    test_texts, test_labels = read(args.test)
    classes = sorted(set(train_labels))
    vectorize = keras.layers.TextVectorization(output_mode="int")
    vectorize.adapt(train_texts)
    x_train = np.asarray(vectorize(train_texts))
    x_test = np.asarray(vectorize(test_texts))
    y_train = np.array([classes.index(label) for label in train_labels])
    y_test = np.array([classes.index(label) for label in test_labels])

    model = keras.Sequential([
        keras.Input(shape=(None,), dtype="int32"),
        keras.layers.Embedding(vectorize.vocabulary_size(), args.units, mask_zero=True),
        keras.layers.LSTM(args.units),
        keras.layers.Dense(len(classes), activation="softmax"),
    ])
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.fit(x_train, y_train, batch_size=args.batch_size, epochs=args.epochs, verbose=2)
    _, accuracy = model.evaluate(x_test, y_test, batch_size=args.batch_size, verbose=0)
    print(json.dumps({"accuracy": float(accuracy)}))


if __name__ == "__main__":
    main()
