"""The data of Keras's addition example (addition_rnn.py in keras-io), as it makes it, shared by the two addition
scripts so that both train and test on the same questions: distinct "a+b" of 1- to 3-digit numbers (a+b and
b+a count once), the question padded with spaces to 7 characters and reversed, the answer padded to 4."""

import numpy as np

DIGITS = 3
MAXLEN = DIGITS + 1 + DIGITS
CHARS = sorted(set("0123456789+ "))


def questions(count, seed):
    """`count` (reversed question, answer) pairs."""
    rng = np.random.default_rng(seed)
    seen, pairs = set(), []
    while len(pairs) < count:
        def number():
            return int("".join(rng.choice(list("0123456789")) for _ in range(rng.integers(1, DIGITS + 1))))
        a, b = number(), number()
        key = tuple(sorted((a, b)))
        if key in seen:
            continue
        seen.add(key)
        question = f"{a}+{b}"
        pairs.append(((question + " " * (MAXLEN - len(question)))[::-1], str(a + b).ljust(DIGITS + 1)))
    return pairs
