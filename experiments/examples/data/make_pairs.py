"""Writes numbers.tsv beside this script: English number words → their digits, one pair a line.

    three hundred and forty-two<TAB>3 4 2<TAB>seqkeras make_pairs.py

The format of Tatoeba/Anki downloads (source<TAB>target<TAB>attribution), made
here so the example downloads nothing. Every number from 1 to 999 once, in a
seeded order; the digits are separated by spaces so each is a token of its own
(a word-level tokenizer would read "342" as one unseen word). Run it again to
get the same file: `python experiments/examples/data/make_pairs.py`.
"""

from __future__ import annotations

import random
from pathlib import Path

ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
        "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
ATTRIBUTION = "seqkeras make_pairs.py"  # a third field, as Tatoeba's attribution: the task ignores it


def words(number: int) -> str:
    """1–999 in British English words: 342 → 'three hundred and forty-two'."""
    hundreds, rest = divmod(number, 100)
    parts = [f"{ONES[hundreds]} hundred"] if hundreds else []
    if rest:
        tens, ones = divmod(rest, 10)
        below_hundred = ONES[rest] if rest < 20 else TENS[tens] + (f"-{ONES[ones]}" if ones else "")
        parts.append(("and " if hundreds else "") + below_hundred)
    return " ".join(parts)


def main() -> None:
    numbers = list(range(1, 1000))
    random.Random(0).shuffle(numbers)  # file order says nothing; the task's own split is seeded anyway
    lines = [f"{words(n).capitalize()}\t{' '.join(str(n))}\t{ATTRIBUTION}\n" for n in numbers]
    (Path(__file__).parent / "numbers.tsv").write_text("".join(lines), encoding="utf-8")


if __name__ == "__main__":
    main()
