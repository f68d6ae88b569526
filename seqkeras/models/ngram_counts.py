"""A small n-gram count model: the lesson's "these probabilities are just counts".

    P(w_t | w_{t-1}) = count(w_{t-1}, w_t) / count(w_{t-1})

`NgramCounts` counts every n-gram of a tokenised corpus once and answers
`probability(word, context)` in one of three ways:

* "none"        maximum likelihood, the lesson's formula. Anything never seen
                gets probability 0, which is the lesson's sparsity problem.
* "add_k"       add k to every count (k = 1 is Laplace smoothing).
* "kneser_ney"  interpolated Kneser-Ney: subtract a discount from every seen
                count and give the freed mass to a lower-order model that
                counts in how many *different contexts* a word appears.

Conventions (they decide what "sums to 1" means):

* Each sentence is padded with order - 1 `bos` markers in front and one `eos`
  marker at the end, so the first word has a full context and the model also
  predicts where a sentence stops.
* The vocabulary of predictable words is every training word plus `eos`
  (`bos` is only ever context). Smoothed probabilities sum to 1 over it for
  any context, seen or not. Words outside it get probability 0.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from typing import Literal

Smoothing = Literal["none", "add_k", "kneser_ney"]


def tokenize(sentence: str) -> list[str]:
    """Lower-cased words (letters, digits, inner apostrophes); punctuation is dropped."""
    return re.findall(r"\w+(?:'\w+)*", sentence.lower())


class NgramCounts:
    def __init__(
        self,
        order: int,
        sentences: list[list[str]],
        bos: str = "<s>",
        eos: str = "</s>",
        *,
        smoothing: Smoothing = "none",
        k: float = 1.0,
        discount: float = 0.75,
    ):
        if order < 1:
            raise ValueError(f"order must be at least 1 (1 = unigram), got {order}")
        if smoothing not in ("none", "add_k", "kneser_ney"):
            raise ValueError(
                f"smoothing must be 'none', 'add_k' or 'kneser_ney', got {smoothing!r}"
            )
        if smoothing == "add_k" and k <= 0:
            raise ValueError(f"add-k smoothing needs k > 0, got {k}")
        # With integer counts >= 1, a discount in (0, 1] never drives a seen count below zero,
        # which is what makes the Kneser-Ney distribution sum to exactly 1.
        if smoothing == "kneser_ney" and not 0 < discount <= 1:
            raise ValueError(f"the Kneser-Ney discount must be in (0, 1], got {discount}")
        if not sentences:
            raise ValueError("an n-gram model needs at least one training sentence")
        self.order = order
        self.bos, self.eos = bos, eos
        self.smoothing, self.k, self.discount = smoothing, k, discount

        # counts[n][context][word]: how often `word` followed the (n-1)-word `context`.
        self.counts: dict[int, dict[tuple[str, ...], Counter]] = {
            n: defaultdict(Counter) for n in range(1, order + 1)
        }
        for sentence in sentences:
            padded = [bos] * (order - 1) + list(sentence) + [eos]
            for position in range(order - 1, len(padded)):
                for n in range(1, order + 1):
                    context = tuple(padded[position - n + 1 : position])
                    self.counts[n][context][padded[position]] += 1
        self._derive()

    def _derive(self) -> None:
        """The vocabulary and the continuation counts, from `counts`."""
        order, bos = self.order, self.bos
        self.vocabulary: list[str] = sorted(self.counts[1][()])  # every word that was predicted
        vocab_set = set(self.vocabulary)
        if bos in vocab_set:
            raise ValueError(f"the corpus contains the start marker {bos!r} as a word")

        # continuation[n][context][word]: in how many distinct contexts one word longer the
        # n-gram (context, word) appeared: N1+(. context word). Kneser-Ney's lower orders use
        # these instead of raw counts, so a word that is frequent but only after one
        # particular word ("Francisco" after "San") gets little weight as a fallback.
        self.continuation: dict[int, dict[tuple[str, ...], Counter]] = {
            n: defaultdict(Counter) for n in range(1, order)
        }
        for n in range(2, order + 1):
            for context, followers in self.counts[n].items():
                for word in followers:
                    self.continuation[n - 1][context[1:]][word] += 1

    # ------------------------------------------------------------------ kept

    def to_document(self) -> dict:
        """Everything the model is, as JSON-ready data: the settings and every order's counts
        (`counts[n]` a list of [context, {word: count}]); the rest is derived from them."""
        return {
            "order": self.order, "bos": self.bos, "eos": self.eos,
            "smoothing": self.smoothing, "k": self.k, "discount": self.discount,
            "counts": {str(n): [[list(context), dict(followers)] for context, followers in table.items()]
                       for n, table in self.counts.items()},
        }

    @classmethod
    def from_document(cls, document: dict) -> NgramCounts:
        """The model `to_document` described; ValueError (saying what) for a document that is not one."""
        try:
            order = document["order"]
            if not isinstance(order, int) or isinstance(order, bool) or not 1 <= order <= 64:
                raise ValueError(f"order is {order!r}, not an n-gram order")
            model = cls.__new__(cls)
            model.order = order
            model.bos, model.eos = str(document["bos"]), str(document["eos"])
            model.smoothing, model.k, model.discount = document["smoothing"], float(document["k"]), \
                float(document["discount"])
            if model.smoothing not in ("none", "add_k", "kneser_ney"):
                raise ValueError(f"smoothing is {model.smoothing!r}")
            model.counts = {n: defaultdict(Counter) for n in range(1, order + 1)}
            tables = document["counts"]
            if sorted(tables) != sorted(str(n) for n in range(1, order + 1)):
                raise ValueError(f"counts holds the orders {sorted(tables)}, not 1 to {order}")
            for n in range(1, order + 1):
                for context, followers in tables[str(n)]:
                    if len(context) != n - 1 or not all(isinstance(word, str) for word in context):
                        raise ValueError(f"a context of order {n} is {context!r}")
                    if not all(isinstance(c, int) and not isinstance(c, bool) and c > 0 for c in followers.values()):
                        raise ValueError(f"the counts after {context!r} are not positive whole numbers")
                    model.counts[n][tuple(context)] = Counter(followers)
            if not model.counts[1].get(()):
                raise ValueError("it has no unigram counts")
        except (KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"not an n-gram model's counts ({type(error).__name__}: {error})") from None
        model._derive()
        return model

    # ------------------------------------------------------------------ queries

    def _context(self, context: tuple[str, ...] | list[str]) -> tuple[str, ...]:
        """The last order - 1 words of `context`; shorter contexts are a caller's mistake."""
        context = tuple(context)
        needed = self.order - 1
        if len(context) < needed:
            raise ValueError(
                f"a {self.order}-gram model needs {needed} context word(s), got {context!r}; "
                f"pad the start of a sentence with {self.bos!r}"
            )
        return context[len(context) - needed :] if needed else ()

    def next_word_counts(self, context: tuple[str, ...] | list[str]) -> Counter:
        """How often each word followed `context` in the corpus (a copy)."""
        return Counter(self.counts[self.order].get(self._context(context), Counter()))

    def probability(self, word: str, context: tuple[str, ...] | list[str] = ()) -> float:
        """P(word | context) under the model's smoothing."""
        context = self._context(context)
        if word not in self.counts[1][()]:
            return 0.0  # outside the vocabulary: no smoothing scheme here reserves mass for it
        followers = self.counts[self.order].get(context, Counter())
        total = sum(followers.values())
        if self.smoothing == "none":
            # The lesson's ratio. An unseen context has no estimate at all; 0 is the
            # honest "the model has nothing for this" value.
            return followers[word] / total if total else 0.0
        if self.smoothing == "add_k":
            return (followers[word] + self.k) / (total + self.k * len(self.vocabulary))
        return self._kneser_ney(word, context, highest=True)

    def _kneser_ney(self, word: str, context: tuple[str, ...], highest: bool) -> float:
        """Interpolated Kneser-Ney, recursing from the full context down to a uniform 1/V.

        P(w | h) = max(c(h, w) - D, 0) / c(h)  +  D * N1+(h, .) / c(h) * P(w | h[1:])

        c is the raw count at the highest order and the continuation count below it;
        N1+(h, .) is the number of distinct words seen after h, so D * N1+ / c is exactly
        the mass the discount removed. A context never seen passes everything down.
        """
        if highest:
            followers = self.counts[self.order].get(context, Counter())
        else:
            followers = self.continuation[len(context) + 1].get(context, Counter())
        lower = (
            self._kneser_ney(word, context[1:], highest=False)
            if context
            else 1.0 / len(self.vocabulary)
        )
        total = sum(followers.values())
        if total == 0:
            return lower
        kept = max(followers[word] - self.discount, 0.0) / total
        return kept + self.discount * len(followers) / total * lower

    def sentence_probability(self, sentence: list[str]) -> float:
        """P(sentence, then eos) as the product of its n-gram probabilities."""
        log_p = self.sentence_log_probability(sentence)
        return math.exp(log_p) if log_p > -math.inf else 0.0

    def sentence_log_probability(self, sentence: list[str]) -> float:
        """Natural-log probability; -inf as soon as one n-gram has probability 0."""
        padded = [self.bos] * (self.order - 1) + list(sentence) + [self.eos]
        log_p = 0.0
        for position in range(self.order - 1, len(padded)):
            context = tuple(padded[position - self.order + 1 : position])
            p = self.probability(padded[position], context)
            if p == 0.0:
                return -math.inf
            log_p += math.log(p)
        return log_p

    def ngrams(self, sentence: list[str]) -> list[tuple[str, ...]]:
        """The padded order-grams of one sentence, as this model counts them."""
        padded = [self.bos] * (self.order - 1) + list(sentence) + [self.eos]
        n = self.order
        return [tuple(padded[i - n + 1 : i + 1]) for i in range(n - 1, len(padded))]

    def seen(self, ngram: tuple[str, ...]) -> bool:
        """Whether this exact order-gram occurred in the training corpus."""
        *context, word = ngram
        return self.counts[self.order].get(tuple(context), Counter())[word] > 0
