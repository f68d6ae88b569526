"""Writes numbers.tsv and zahlen.tsv beside this script (or into the folder given), one pair a line:

    numbers.tsv  English number words → their digits:   three hundred and forty-two<TAB>3 4 2<TAB>…
    zahlen.tsv   German number words → English words:     drei hundert zwei und vierzig<TAB>three hundred and
                                                          forty-two<TAB>…

zahlen.tsv is a small translation task with reordering ("zwei und vierzig" is "forty-two"), for comparing
encoder-decoders on a de→en pair file (docs/guides/sentence-pairs.md). Its German compounds are split into their
parts ("dreihundertzweiundvierzig" → "drei hundert zwei und vierzig"), as German is usually split for machine
translation, so that a word-level tokenizer sees the parts.

The format of Tatoeba/Anki downloads (source<TAB>target<TAB>attribution), made
here so the example downloads nothing. Every number from 1 to 999 once, in a
seeded order; the digits are separated by spaces so each is a token of its own
(a word-level tokenizer would read "342" as one unseen word). Run it again to
get the same files: `python experiments/examples/data/make_pairs.py [FOLDER]`.
"""

from __future__ import annotations

import random
import sys
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


# German, its compounds split into their parts: 1 is "eins" alone or at the end, "ein" before "und" or "hundert".
EINER = ["", "eins", "zwei", "drei", "vier", "fünf", "sechs", "sieben", "acht", "neun", "zehn", "elf", "zwölf",
         "dreizehn", "vierzehn", "fünfzehn", "sechzehn", "siebzehn", "achtzehn", "neunzehn"]
ZEHNER = ["", "", "zwanzig", "dreißig", "vierzig", "fünfzig", "sechzig", "siebzig", "achtzig", "neunzig"]


def german_words(number: int) -> str:
    """1–999 in German, compounds split: 342 → 'drei hundert zwei und vierzig', 101 → 'ein hundert eins'."""
    hundreds, rest = divmod(number, 100)
    parts = [f"{'ein' if hundreds == 1 else EINER[hundreds]} hundert"] if hundreds else []
    if rest:
        tens, ones = divmod(rest, 10)
        if rest < 20:
            parts.append(EINER[rest])
        else:
            parts.append((f"{'ein' if ones == 1 else EINER[ones]} und " if ones else "") + ZEHNER[tens])
    return " ".join(parts)


def main(folder: Path) -> None:
    numbers = list(range(1, 1000))
    random.Random(0).shuffle(numbers)  # file order says nothing; the task's own split is seeded anyway
    lines = [f"{words(n).capitalize()}\t{' '.join(str(n))}\t{ATTRIBUTION}\n" for n in numbers]
    (folder / "numbers.tsv").write_text("".join(lines), encoding="utf-8")
    german = [f"{german_words(n).capitalize()}\t{words(n).capitalize()}\t{ATTRIBUTION}\n" for n in numbers]
    (folder / "zahlen.tsv").write_text("".join(german), encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent)
