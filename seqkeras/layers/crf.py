"""A linear-chain conditional random field (CRF) output layer, written with `keras.ops` only.

A BiLSTM-CRF tagger gives every position a vector of unary scores ("emissions",
[B, T, K] from a Dense layer without activation) and the CRF adds learned scores
for tag bigrams, so it scores whole tag sequences:

    score(x, y) = start[y_0] + sum_t emissions[t, y_t]
                  + sum_{t>=1} transitions[y_{t-1}, y_t] + end[y_{L-1}]
    log p(y | x) = score(x, y) - logsumexp over all K**L sequences y' of score(x, y')

(L is the sequence's true length; positions where the mask is False are padding,
which must be at the end of each sequence.) The normaliser is computed by the
forward algorithm, the per-position marginals p(y_t | x) by forward-backward
(reusing the same forward pass) and the best sequence by Viterbi, each as a
`keras.ops.scan` over time (`_scan`), so they work eagerly, inside `tf.function` (`model.fit` /
`model.predict`) and with a dynamic sequence length.

Design: how the CRF plugs into a Keras model
--------------------------------------------
* `CRF.call(emissions, mask=None, training=None)` returns the emissions
  unchanged (an identity with mask propagation). The forward graph stays a plain
  "emissions" graph; the layer's weights (transition, start and end scores) are
  used by `CRF.log_likelihood` / `CRF.negative_log_likelihood` (training),
  `CRF.viterbi_decode` and `CRF.marginals` (inference).
* `CRFTagger(encoder, crf)` is a small `keras.Model` subclass that wires this up:
  `model(x)` gives emissions (carrying the encoder's Keras mask, e.g. from
  `Embedding(mask_zero=True)`), `compute_loss` returns the CRF negative
  log-likelihood (mean over the batch), so `model.compile(optimizer)` (no `loss`)
  and `model.fit(x, y)` train it, and `model.predict(x)` returns Viterbi tag ids
  [B, T] (int32, 0 at padded positions) instead of emissions. The mask reaches
  `compute_loss` the way Keras passes masks to its own losses: attached to
  `y_pred`.
* Transitions can be forbidden (`allowed_transitions`, `allowed_start`,
  `allowed_end`; see `bio_transition_constraints`). A forbidden transition gets
  the score `FORBIDDEN_SCORE` (-1e4, as in AllenNLP's CRF) instead of its learned
  value, so Viterbi never predicts it and it carries no probability mass. Gold
  training sequences must not use forbidden transitions (their NLL would be ~1e4).

The CRF math runs in float32 whatever the layer's compute dtype (log-space sums
need the precision under mixed precision).

`CRF` is backend-agnostic, and so is `CRFTagger.predict`: its `predict_step`
takes the TensorFlow and torch trainers' `(data)` and the JAX trainer's
stateless `(state, data)`, and subclasses change what a batch predicts in
`predict_batch`.
"""

from __future__ import annotations

from collections.abc import Sequence

import keras
import numpy as np
from keras import ops

from seqkeras.backends.serializable import keras_serializable

try:  # not exported as public API; it is what Keras's own losses use to read masks
    from keras.src.backend import get_keras_mask as _get_keras_mask
except ImportError:  # pragma: no cover - older/newer Keras layouts

    def _get_keras_mask(x):
        return getattr(x, "_keras_mask", None)


FORBIDDEN_SCORE = -1e4
_BIO_ONLY_PREFIXES = ("E-", "S-", "L-", "U-")


def _split_bio(tag: str) -> tuple[str | None, str | None]:
    """("B", "PER") for "B-PER", ("I", "PER") for "I-PER", (None, None) for O-like tags."""
    if tag.startswith(("B-", "I-")):
        entity_type = tag[2:]
        if not entity_type:
            raise ValueError(f"tag {tag!r} has no entity type")
        return tag[0], entity_type
    if tag.startswith(_BIO_ONLY_PREFIXES):
        raise ValueError(
            f"tag {tag!r} is not a BIO tag; bio_transition_constraints supports "
            "only O, B-X and I-X tags"
        )
    return None, None


def bio_transition_constraints(
    tag_names: Sequence[str],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The transitions a BIO (IOB2) tagging may use, as boolean numpy arrays.

    Returns `(allowed [K, K], allowed_start [K], allowed_end [K])` where
    `allowed[i, j]` says whether tag j may follow tag i. `I-X` may only follow
    `B-X` or `I-X` and may not start a sentence; everything else is allowed, and
    any tag may end a sentence. Tags other than `B-X`/`I-X` (`O`, or a padding tag
    such as `<pad>`) are treated like `O`. Pass the arrays to `CRF(...)`.
    """
    parsed = [_split_bio(tag) for tag in tag_names]
    k = len(parsed)
    allowed = np.ones((k, k), dtype=bool)
    allowed_start = np.ones(k, dtype=bool)
    allowed_end = np.ones(k, dtype=bool)
    for j, (prefix_j, type_j) in enumerate(parsed):
        if prefix_j != "I":
            continue
        allowed_start[j] = False
        for i, (prefix_i, type_i) in enumerate(parsed):
            allowed[i, j] = prefix_i in ("B", "I") and type_i == type_j
    return allowed, allowed_start, allowed_end


def _bool_array(value, shape: tuple[int, ...], name: str) -> np.ndarray | None:
    if value is None:
        return None
    array = np.asarray(value)
    if array.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {array.shape}")
    if array.dtype != bool:
        if not np.isin(array, (0, 1)).all():
            raise ValueError(f"{name} must be boolean (or 0/1)")
        array = array.astype(bool)
    return array


@keras_serializable
class CRF(keras.layers.Layer):
    """Linear-chain CRF over per-position tag scores.

    Args:
        num_tags: K, the number of tags (the last dimension of the emissions).
        allowed_transitions: optional [K, K] booleans, `[i, j]` True if tag j may
            follow tag i. Forbidden transitions score `FORBIDDEN_SCORE`.
        allowed_start: optional [K] booleans, tags that may start a sequence.
        allowed_end: optional [K] booleans, tags that may end a sequence.
        transitions_initializer: initializer of the transition, start and end
            scores (default zeros: the CRF starts as independent per-position
            softmaxes).

    Call: `crf(emissions, mask=None)` returns `emissions` unchanged and
    propagates the mask (see the module docstring). Use `log_likelihood`,
    `negative_log_likelihood`, `viterbi_decode` and `marginals` for the CRF itself; their
    `mask` argument defaults to the Keras mask attached to `emissions`, else no
    padding. Masks are [B, T], True (or 1) for real tokens, padding at the end.
    """

    def __init__(
        self,
        num_tags: int,
        allowed_transitions=None,
        allowed_start=None,
        allowed_end=None,
        transitions_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        num_tags = int(num_tags)
        if num_tags < 1:
            raise ValueError(f"num_tags must be positive, got {num_tags}")
        self.num_tags = num_tags
        k = num_tags
        self.allowed_transitions = _bool_array(allowed_transitions, (k, k), "allowed_transitions")
        self.allowed_start = _bool_array(allowed_start, (k,), "allowed_start")
        self.allowed_end = _bool_array(allowed_end, (k,), "allowed_end")
        self.transitions_initializer = keras.initializers.get(transitions_initializer)
        self.supports_masking = True

    # ----- Keras layer plumbing -------------------------------------------------

    def build(self, input_shape=None):
        if input_shape is not None and input_shape[-1] is not None:
            if int(input_shape[-1]) != self.num_tags:
                raise ValueError(
                    f"CRF has num_tags={self.num_tags} but its input has "
                    f"{input_shape[-1]} scores per position"
                )
        k = self.num_tags
        self.transitions = self.add_weight(
            name="transitions", shape=(k, k), initializer=self.transitions_initializer, dtype="float32"
        )
        self.start_scores = self.add_weight(
            name="start_scores", shape=(k,), initializer=self.transitions_initializer, dtype="float32"
        )
        self.end_scores = self.add_weight(
            name="end_scores", shape=(k,), initializer=self.transitions_initializer, dtype="float32"
        )

    def call(self, emissions, mask=None, training=None):
        return emissions

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            num_tags=self.num_tags,
            allowed_transitions=_to_list(self.allowed_transitions),
            allowed_start=_to_list(self.allowed_start),
            allowed_end=_to_list(self.allowed_end),
            transitions_initializer=keras.initializers.serialize(self.transitions_initializer),
        )
        return config

    # ----- CRF --------------------------------------------------------------

    def constrained_scores(self):
        """(transitions [K, K], start [K], end [K]) with forbidden entries set to FORBIDDEN_SCORE."""
        if not self.built:
            self.build((None, None, self.num_tags))
        scores = []
        for value, allowed in (
            (self.transitions, self.allowed_transitions),
            (self.start_scores, self.allowed_start),
            (self.end_scores, self.allowed_end),
        ):
            value = ops.cast(value, "float32")
            if allowed is not None:
                value = ops.where(ops.convert_to_tensor(allowed), value, FORBIDDEN_SCORE)
            scores.append(value)
        return tuple(scores)

    def _prepare(self, emissions, mask):
        if mask is None:
            mask = _get_keras_mask(emissions)
        emissions = ops.cast(emissions, "float32")
        if mask is None:
            mask = ops.ones_like(emissions[..., 0], dtype="bool")
        else:
            mask = ops.cast(mask, "bool")
        return emissions, mask

    def log_likelihood(self, emissions, tags, mask=None):
        """log p(tags | emissions) for each sequence, [B] float32 (0 for empty sequences)."""
        emissions, mask = self._prepare(emissions, mask)
        tags = ops.where(mask, ops.cast(tags, "int32"), 0)  # padding labels may be anything
        transitions, start, end = self.constrained_scores()
        gold = self._sequence_score(emissions, tags, mask, transitions, start, end)
        log_z = self._log_partition(emissions, mask, transitions, start, end)
        nonempty = ops.any(mask, axis=1)
        return ops.where(nonempty, gold - log_z, 0.0)

    def negative_log_likelihood(self, emissions, tags, mask=None, sample_weight=None):
        """Mean over the batch of -log p(tags | emissions) (optionally weighted per sequence), a scalar."""
        nll = -self.log_likelihood(emissions, tags, mask)
        if sample_weight is not None:
            sample_weight = ops.reshape(ops.cast(sample_weight, "float32"), (-1,))
            nll = nll * sample_weight
        return ops.mean(nll)

    def sequence_score(self, emissions, tags, mask=None):
        """The unnormalised score(x, y) of the given tag sequences, [B]."""
        emissions, mask = self._prepare(emissions, mask)
        tags = ops.where(mask, ops.cast(tags, "int32"), 0)
        return self._sequence_score(emissions, tags, mask, *self.constrained_scores())

    def log_partition(self, emissions, mask=None):
        """log of the sum over all tag sequences of exp(score), [B] (forward algorithm)."""
        emissions, mask = self._prepare(emissions, mask)
        return self._log_partition(emissions, mask, *self.constrained_scores())

    def _sequence_score(self, emissions, tags, mask, transitions, start, end):
        weights = ops.cast(mask, "float32")
        emitted = ops.take_along_axis(emissions, ops.expand_dims(tags, -1), axis=2)[..., 0]
        score = ops.sum(emitted * weights, axis=1)
        score = score + ops.take(start, tags[:, 0], axis=0)
        # transitions[y_{t-1}, y_t] for t >= 1, read from the flattened matrix.
        pairs = tags[:, :-1] * self.num_tags + tags[:, 1:]
        pair_scores = ops.take(ops.reshape(transitions, (-1,)), pairs, axis=0)
        score = score + ops.sum(pair_scores * weights[:, 1:], axis=1)
        lengths = ops.sum(ops.cast(mask, "int32"), axis=1)
        last = ops.maximum(lengths - 1, 0)
        last_tags = ops.take_along_axis(tags, ops.expand_dims(last, -1), axis=1)[:, 0]
        return score + ops.take(end, last_tags, axis=0)

    def _time_major_rest(self, emissions, mask):
        """Steps 1..T-1 as one scan input: [T-1, B, K + 1], the mask as the last channel.

        One tensor rather than an (emissions, mask) pair: Keras 3.15's TensorFlow
        `scan` fails on several `xs` whose length is not static (a dynamic T).
        """
        packed = ops.concatenate([emissions, ops.expand_dims(ops.cast(mask, emissions.dtype), -1)], axis=-1)
        return ops.moveaxis(packed[:, 1:], 1, 0)

    def _unpack_step(self, packed_t):
        return packed_t[:, : self.num_tags], packed_t[:, self.num_tags] > 0.5

    def _forward(self, emissions, steps, transitions, start, *, every_step: bool = False):
        """The forward algorithm over `steps` (`_time_major_rest`): alpha_t[b, k] is the log of the summed
        exp-scores of every tag prefix y_0..y_t that ends in k.

        Returns alpha at the last step [B, K] (padding keeps alpha as it was, so this is each
        sequence's alpha at its true last position) and, with `every_step`, every step's
        [T, B, K], time-major. `_log_partition` and `marginals` both compute it here.
        """
        alpha0 = ops.expand_dims(start, 0) + emissions[:, 0]  # [B, K]
        trans = ops.expand_dims(transitions, 0)  # [1, K_prev, K_next]

        def step(alpha, packed_t):
            emission_t, mask_t = self._unpack_step(packed_t)
            new = ops.logsumexp(ops.expand_dims(alpha, 2) + trans, axis=1) + emission_t
            alpha = ops.where(ops.expand_dims(mask_t, 1), new, alpha)  # padding keeps alpha
            # TF's scan wants outputs shaped like the carry (the stacked alphas `every_step` asks for).
            return alpha, alpha

        alpha, alphas = _scan(step, alpha0, steps)
        if not every_step:
            return alpha, None
        return alpha, ops.concatenate([ops.expand_dims(alpha0, 0), alphas], axis=0)

    def _log_partition(self, emissions, mask, transitions, start, end):
        alpha, _ = self._forward(emissions, self._time_major_rest(emissions, mask), transitions, start)
        # Padding is at the end and leaves alpha unchanged, so the end score is
        # added at each sequence's true last position.
        return ops.logsumexp(alpha + ops.expand_dims(end, 0), axis=1)

    def marginals(self, emissions, mask=None):
        """p(y_t = k | x) for every position, [B, T, K] float32, by forward-backward in log space.

        Rows at padded positions repeat the last real position's and are to be ignored.
        """
        emissions, mask = self._prepare(emissions, mask)
        transitions, start, end = self.constrained_scores()
        steps = self._time_major_rest(emissions, mask)
        _, alphas = self._forward(emissions, steps, transitions, start, every_step=True)
        trans = ops.expand_dims(transitions, 0)  # [1, K_prev, K_next]

        def step(beta, packed_next):  # beta_{t+1} and position t+1 -> beta_t
            emission, real = self._unpack_step(packed_next)
            new = ops.logsumexp(trans + ops.expand_dims(emission + beta, 1), axis=2)
            beta = ops.where(ops.expand_dims(real, 1), new, beta)  # past the end, beta stays the end score
            return beta, beta

        beta_last = ops.zeros_like(emissions[:, 0]) + ops.expand_dims(end, 0)
        _, betas = _scan(step, beta_last, steps, reverse=True)
        betas = ops.concatenate([betas, ops.expand_dims(beta_last, 0)], axis=0)
        return ops.moveaxis(ops.softmax(alphas + betas, axis=-1), 0, 1)

    def viterbi_decode(self, emissions, mask=None):
        """The highest-scoring tag sequence for each input, [B, T] int32 (0 at padding)."""
        emissions, mask = self._prepare(emissions, mask)
        transitions, start, end = self.constrained_scores()
        trans = ops.expand_dims(transitions, 0)
        delta0 = ops.expand_dims(start, 0) + emissions[:, 0]  # [B, K]
        # Backpointer used at padded steps: each tag points to itself, so the
        # backtrace walks unchanged through the padding to the true last position.
        identity = ops.zeros_like(delta0, dtype="int32") + ops.arange(self.num_tags, dtype="int32")

        def forward(carry, packed_t):
            delta, _ = carry
            emission_t, mask_t = self._unpack_step(packed_t)
            candidates = ops.expand_dims(delta, 2) + trans  # [B, K_prev, K_next]
            best_prev = ops.cast(ops.argmax(candidates, axis=1), "int32")
            new = ops.max(candidates, axis=1) + emission_t
            keep = ops.expand_dims(mask_t, 1)
            carry = (ops.where(keep, new, delta), ops.where(keep, best_prev, identity))
            return carry, carry

        (delta, _), (_, backpointers) = _scan(
            forward, (delta0, identity), self._time_major_rest(emissions, mask)
        )
        last = ops.cast(ops.argmax(delta + ops.expand_dims(end, 0), axis=1), "int32")  # [B]

        def backward(tag, backpointer_t):
            previous = ops.take_along_axis(backpointer_t, ops.expand_dims(tag, 1), axis=1)[:, 0]
            return previous, previous

        _, earlier = _scan(backward, last, backpointers, reverse=True)  # [T-1, B]
        path = ops.concatenate([ops.moveaxis(earlier, 0, 1), ops.expand_dims(last, 1)], axis=1)
        return ops.where(mask, path, 0)


def _scan(step, carry, steps, reverse: bool = False):
    """keras.ops.scan for the steps functions here, whose outputs are shaped like their carry; a sequence of
    one position (steps of length 0) leaves the carry as it is. Keras's torch `scan` fails on zero steps
    ("Must provide at least one structure"), which a one-word sentence is."""
    if steps.shape[0] == 0:  # a static 0 (TensorFlow's dynamic T is None: its scan takes zero steps itself)
        return carry, keras.tree.map_structure(lambda value: ops.zeros((0, *value.shape), value.dtype), carry)
    return ops.scan(step, carry, steps, reverse=reverse)


def _to_list(array):
    return None if array is None else array.tolist()


@keras_serializable
class CRFTagger(keras.Model):
    """A sequence tagger: `encoder` (inputs -> emissions [B, T, K]) followed by a `CRF`.

    * `model(x)` returns the emissions, with the encoder's mask attached.
    * `model.compile(optimizer=...)` takes no `loss`: `compute_loss` is the CRF
      negative log-likelihood, averaged over the batch (`sample_weight`, if given,
      is one weight per sequence), plus any regularisation losses. Metrics given
      to `compile` see `y_pred` = emissions.
    * `model.fit(x, y)`: `y` holds tag ids [B, T]; labels at padded positions are ignored.
    * `model.predict(x)` returns Viterbi tag ids [B, T] int32, 0 at padded positions.

    Padding comes from the encoder's Keras mask (e.g. `Embedding(mask_zero=True)`);
    an encoder without a mask means every position is a real token.
    """

    def __init__(self, encoder: keras.Model, crf: CRF, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(crf, CRF):
            raise TypeError(f"crf must be a seqkeras CRF layer, got {type(crf).__name__}")
        self.encoder = encoder
        self.crf = crf

    def build(self, input_shape):
        if not self.encoder.built:
            self.encoder.build(input_shape)
        if not self.crf.built:
            self.crf.build((None, None, self.crf.num_tags))

    def call(self, inputs, training=None, mask=None):
        emissions = self.encoder(inputs, training=training)
        if mask is not None:
            return self.crf(emissions, mask=mask, training=training)
        return self.crf(emissions, training=training)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if self._compile_loss is not None:
            raise ValueError(
                "CRFTagger trains with the CRF negative log-likelihood; "
                "compile it without a `loss`"
            )
        loss = self.crf.negative_log_likelihood(
            y_pred, y, mask=_get_keras_mask(y_pred), sample_weight=sample_weight
        )
        for extra in self.losses:
            loss = loss + ops.sum(ops.cast(extra, "float32"))
        return loss

    def predict_step(self, *args):
        """`predict_batch` of one batch, as each backend's trainer calls it.

        TensorFlow and torch call `predict_step(data)`. JAX calls `predict_step(state, data)`
        with the weights in `state` (the model's own are purged while it predicts) and
        expects `(outputs, non_trainable_variables)` back: the batch is predicted with
        the variables mapped to those values.
        """
        if len(args) == 1:
            return self.predict_batch(args[0])
        state, data = args
        trainable, non_trainable = state
        mapping = [*zip(self.trainable_variables, trainable), *zip(self.non_trainable_variables, non_trainable)]
        with keras.StatelessScope(state_mapping=mapping):
            outputs = self.predict_batch(data)
        return outputs, non_trainable

    def predict_batch(self, data):
        """The Viterbi tag ids of one batch of inputs."""
        x, _, _ = keras.utils.unpack_x_y_sample_weight(data)
        emissions = self(x, training=False)
        return self.crf.viterbi_decode(emissions, mask=_get_keras_mask(emissions))

    def get_config(self):
        config = super().get_config()
        config.update(
            encoder=keras.saving.serialize_keras_object(self.encoder),
            crf=keras.saving.serialize_keras_object(self.crf),
        )
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        encoder = keras.saving.deserialize_keras_object(config.pop("encoder"), custom_objects=custom_objects)
        crf = keras.saving.deserialize_keras_object(config.pop("crf"), custom_objects=custom_objects)
        return cls(encoder=encoder, crf=crf, **config)
