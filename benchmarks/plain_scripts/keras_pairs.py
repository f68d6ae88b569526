"""A sentence-pair file translated by a plain Keras encoder-decoder, as Keras's sequence-to-sequence example writes
one ("Character-level recurrent sequence-to-sequence model", lstm_seq2seq.py in keras-io), at the word level with
GRUs: the encoder's last state starts the decoder, which is trained with teacher forcing, and the outputs are
decoded greedily by an encoder model and a one-step decoder model, as that example decodes them.

Its data (pairs_data.py, shared with pytorch_pairs.py): two files of `source<TAB>target` lines (train and test);
words and single punctuation marks, lowercased.
Its model: Embedding(32, masking the padding) → GRU(64) → its state → GRU(64) over the target's embeddings →
a softmax; Adam 0.005 with gradients clipped to norm 1, batch 32, shuffled. The backend is Keras's
(`KERAS_BACKEND`), with its defaults for threads. benchmarks/plain_scripts.py runs it as a process of its own.

    KERAS_BACKEND=jax python benchmarks/plain_scripts/keras_pairs.py train.tsv test.tsv --epochs 20

The last line printed is JSON: the share of test sources whose greedy output is their target exactly.
"""

import argparse
import json

import keras
import numpy as np
from pairs_data import END, PAD, START, GreedyOutputs, Vocabularies, read


def padded(rows):
    width = max(len(row) for row in rows)
    return np.array([row + [PAD] * (width - len(row)) for row in rows], dtype="int32")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("train")
    parser.add_argument("test")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    keras.utils.set_random_seed(args.seed)
    train, test = read(args.train), read(args.test)
    vocabularies = Vocabularies(train)

    def sources(pairs):
        return padded([vocabularies.source_ids(s) for s, _ in pairs])

    targets = [vocabularies.target_ids(t) for _, t in train]
    decoder_input, decoder_target = padded([[START, *t] for t in targets]), padded([[*t, END] for t in targets])

    encoder_inputs = keras.Input((None,), dtype="int32")
    embedded = keras.layers.Embedding(vocabularies.source_size, 32, mask_zero=True)(encoder_inputs)
    _, state = keras.layers.GRU(64, return_state=True)(embedded)
    decoder_inputs = keras.Input((None,), dtype="int32")
    target_embedding = keras.layers.Embedding(len(vocabularies.target_words), 32, mask_zero=True)
    decoder_gru = keras.layers.GRU(64, return_sequences=True, return_state=True)
    softmax = keras.layers.Dense(len(vocabularies.target_words), activation="softmax")
    decoded, _ = decoder_gru(target_embedding(decoder_inputs), initial_state=state)
    model = keras.Model([encoder_inputs, decoder_inputs], softmax(decoded))
    model.compile(optimizer=keras.optimizers.Adam(0.005, clipnorm=1.0), loss="sparse_categorical_crossentropy")
    model.fit([sources(train), decoder_input], decoder_target, batch_size=32, epochs=args.epochs, verbose=2)

    # Inference as the example's: the encoder alone, then one decoder step at a time from its state.
    encoder = keras.Model(encoder_inputs, state)
    step_token, step_state = keras.Input((1,), dtype="int32"), keras.Input((64,))
    step_output, next_state = decoder_gru(target_embedding(step_token), initial_state=step_state)
    decoder = keras.Model([step_token, step_state], [softmax(step_output), next_state])
    state = encoder.predict(sources(test), verbose=0)
    token = np.full((len(test), 1), START, dtype="int32")
    outputs = GreedyOutputs(test, vocabularies.target_words)
    for _ in range(outputs.steps):
        probabilities, state = decoder.predict([token, state], verbose=0)
        token = probabilities[:, -1].argmax(-1).astype("int32")[:, None]
        if outputs.add(token[:, 0].tolist()):
            break
    print(json.dumps({"accuracy": float(outputs.exact_match())}))


if __name__ == "__main__":
    main()
