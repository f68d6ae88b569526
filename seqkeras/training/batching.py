"""Batches of similar length (`train.batches: by_length`), as fairseq, OpenNMT and tf.data's bucketing make them.

A task pads every sequence to one width (its longest, or its maximum), so a batch of short
sentences carries mostly padding, computed and then masked out. By length, each epoch:

1. the rows in the epoch's seeded order, as `shuffled` batches them;
2. cut into pools of `POOL_BATCHES` batches, each pool sorted by length (stable), then cut into
   batches: rows of similar length together, a different grouping every epoch;
3. the batches in a second seeded order, so that an epoch does not run from short to long;
4. each batch cut to its longest row, rounded up to a multiple of `WIDTH_STEP` (never past the
   task's width): JAX and TensorFlow compile one step per width, so a few widths, not one per length.

Pools are whole batches, so only the epoch's last batch is partial, as with `shuffled`: an epoch has
the same number of steps either way. The numbers change, though (other rows share a batch, and Keras's
loss averages over a batch's token slots, padding included, with padding weighted 0), so it is an option.

Right padding is assumed (every task pads so: id 0 after the tokens). An encoder-decoder's rows are
sorted by source length, then target length, and the source and the target sides each cut to their
own longest.
"""

from __future__ import annotations

import numpy as np

AUTO, SHUFFLED, BY_LENGTH = "auto", "shuffled", "by_length"
POOL_BATCHES = 100
WIDTH_STEP = 8


def lengths(tokens: np.ndarray) -> np.ndarray:
    """Each right-padded row's length: the position after its last non-zero id."""
    real = tokens != 0
    return np.where(real.any(axis=1), tokens.shape[1] - np.argmax(real[:, ::-1], axis=1), 0)


def token_sequences(x) -> bool:
    """Whether `x` is what batching by length cuts: right-padded ids (a 2-D integer array), or an encoder-decoder's
    two sides of them ({source, decoder_input}); not a regression's real-valued steps nor a plug-in task's arrays
    of another shape."""
    arrays = [x.get("source"), x.get("decoder_input")] if isinstance(x, dict) else [x]
    return all(isinstance(a, np.ndarray) and a.ndim == 2 and a.dtype.kind in "iu" for a in arrays)


def row_lengths(x) -> list[np.ndarray]:
    """The lengths that sort and cut a batch: the tokens', or an encoder-decoder's source's, then its target's."""
    if isinstance(x, dict):
        return [lengths(x["source"]), lengths(x["decoder_input"])]
    return [lengths(x)]


def epoch_batches(keys: list[np.ndarray], batch_size: int, seed: int, epoch: int) -> list[np.ndarray]:
    """The epoch's batches, by length: each an array of row indices (see the module's steps 1-3). `keys`: the rows'
    lengths (`row_lengths`), read once for every epoch."""
    rows = len(keys[0])
    order = np.random.default_rng([seed, epoch]).permutation(rows)
    pool = batch_size * POOL_BATCHES
    batches = []
    for start in range(0, rows, pool):
        chunk = order[start:start + pool]
        chunk = chunk[np.lexsort([key[chunk] for key in reversed(keys)])]  # the first key sorts first; stable
        batches += [chunk[at:at + batch_size] for at in range(0, len(chunk), batch_size)]
    shuffled = np.random.default_rng([seed, epoch, 1]).permutation(len(batches))
    return [batches[index] for index in shuffled]


def width(batch_lengths: np.ndarray, full: int) -> int:
    """A batch's width: its longest row rounded up to a multiple of WIDTH_STEP, at least 1, at most `full`."""
    longest = max(int(batch_lengths.max(initial=0)), 1)
    return min(-(-longest // WIDTH_STEP) * WIDTH_STEP, full)


def cut(x, y, weights, rows: np.ndarray, keys: list[np.ndarray]):
    """The batch `rows` of (x, y, weights), each side cut to its width (from `keys`, the rows' `row_lengths`).
    Arrays of one value per row (a class, a row's weight) are taken whole; arrays of one value per token follow the
    width of the tokens they align with."""
    if isinstance(x, dict):
        source, target = x["source"], x["decoder_input"]
        keep_source, keep_target = (width(key[rows], full.shape[1]) for key, full in zip(keys, (source, target)))
        batch_x = {"source": source[rows, :keep_source], "decoder_input": target[rows, :keep_target]}
        aligned = target.shape[1], keep_target
    else:
        keep = width(keys[0][rows], x.shape[1])
        batch_x, aligned = x[rows, :keep], (x.shape[1], keep)

    def per_token(array):
        if array is None:
            return None
        array = array[rows]
        return array[:, :aligned[1]] if array.ndim >= 2 and array.shape[1] == aligned[0] else array

    return batch_x, per_token(y), per_token(weights)


def padding(x, batch_size: int, seed: int) -> dict[str, float]:
    """The share of the training batches' token slots that are padding: at the task's width (`shuffled`), and in
    the first epoch's batches by length; for the data card."""
    keys = row_lengths(x)
    widths = [x["source"].shape[1], x["decoder_input"].shape[1]] if isinstance(x, dict) else [x.shape[1]]
    rows = len(keys[0])
    tokens = sum(int(key.sum()) for key in keys)
    slots_padded = rows * sum(widths)
    slots_by_length = sum(len(batch) * sum(width(key[batch], full) for key, full in zip(keys, widths))
                          for batch in epoch_batches(keys, batch_size, seed, 0))
    return {"shuffled": 1 - tokens / slots_padded if slots_padded else 0.0,
            "by_length": 1 - tokens / slots_by_length if slots_by_length else 0.0}
