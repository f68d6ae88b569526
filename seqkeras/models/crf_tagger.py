"""The tagger with a CRF output (`model: {kind: tagger, output: crf}`): the BiLSTM-CRF.

Embedding → recurrent stack (the same body as every recurrent kind) → Dense
emission scores, one per tag → a linear-chain CRF that scores whole tag
sequences (`seqkeras.layers.crf`). With `constrain_transitions`, the tag
bigrams that BIO forbids (`O I-PER`, `B-LOC I-PER`, a sentence starting with
`I-X`) and the padding tag get the CRF's forbidden score, so they are never
predicted; without it, the CRF has to learn from the data that they do not
happen.

How it meets the suite's training and prediction (`seqkeras.training.trainer`), as the
tagger kind declares for a CRF output (`models.recurrent.tagger_abilities`):

* own loss: `fit` compiles it with the optimizer only (its loss is the
  CRF negative log-likelihood) and passes no per-token sample weights (padding
  is masked through the Embedding's Keras mask).
* `predict` gives what a softmax tagger's `predict` gives, a distribution over
  tags per token [N, T, K]: here the CRF's marginals p(y_t = k | x), by the
  forward-backward algorithm, so `cross_entropy` means the same for both.
* `predict_tags` gives the decision, the Viterbi path [N, T] — the best whole
  sequence, which can differ from the per-token argmax of the marginals. Every
  per-token and entity metric scores these ids.
"""

from __future__ import annotations

import keras
import numpy as np
from keras import ops

from seqkeras.backends.serializable import keras_serializable
from seqkeras.layers.crf import CRF, CRFTagger, bio_transition_constraints
from seqkeras.registry import ModelShape, keras_model_shape
from seqkeras.tasks.base import PAD, SequenceData


def crf_marginals(crf: CRF, emissions, mask):
    """p(y_t = k | x) for every position, [B, T, K] float32: the CRF's forward-backward (`CRF.marginals`).

    `mask` [B, T] marks real tokens (padding at the end); the rows at padded
    positions repeat the last real position's and are to be ignored.
    """
    return crf.marginals(emissions, mask)


@keras_serializable
class SequenceCRFTagger(CRFTagger):
    """A `CRFTagger` that predicts like the suite's other taggers (see the module docstring).

    Its encoder takes token ids and masks id 0 (`Embedding(mask_zero=True)`).
    """

    def predict_batch(self, data):  # predict_step (CRFTagger's) calls it on every backend
        x, _, _ = keras.utils.unpack_x_y_sample_weight(data)
        return crf_marginals(self.crf, self(x, training=False), self._mask(x))

    def predict_tags(self, x, batch_size: int | None = None) -> np.ndarray:
        """The Viterbi path of each sequence, [N, T] int32 (0 at padding)."""
        emissions = self.encoder.predict(x, batch_size=batch_size, verbose=0)
        step = batch_size or 32
        paths = [
            ops.convert_to_numpy(
                self.crf.viterbi_decode(emissions[i : i + step], mask=self._mask(x[i : i + step]))
            )
            for i in range(0, len(x), step)
        ]
        return np.concatenate(paths, axis=0) if paths else np.zeros(np.shape(x), np.int32)

    def model_shape(self) -> ModelShape:
        """Its encoder's token ids and emission scores, one per tag and token, which its CRF must score as many tags
        as (`models.recurrent.tagger_shape`)."""
        shape = keras_model_shape(self.encoder)
        if self.crf.num_tags != shape.outputs:
            raise ValueError(f"its CRF scores {self.crf.num_tags} tags but its encoder gives {shape.outputs} "
                             "emission scores per token")
        return shape

    @staticmethod
    def _mask(x):
        return ops.not_equal(x, 0)


def transition_constraints(tag_names: list[str]) -> dict[str, np.ndarray]:
    """BIO's allowed transitions for `CRF(...)`, with the padding tag never allowed at a real token."""
    allowed, allowed_start, allowed_end = bio_transition_constraints(tag_names)
    if PAD in tag_names:
        padding = tag_names.index(PAD)
        allowed[:, padding] = False
        allowed_start[padding] = False
    return {"allowed_transitions": allowed, "allowed_start": allowed_start, "allowed_end": allowed_end}


def build_crf_tagger(inputs, features, data: SequenceData, *, constrain_transitions: bool) -> SequenceCRFTagger:
    """A CRF over emissions from `features` (the recurrent body's every-step output for `inputs`)."""
    emissions = keras.layers.Dense(data.num_outputs, name="emissions")(features)
    encoder = keras.Model(inputs, emissions, name="encoder")
    constraints = transition_constraints(list(data.labels.tokens)) if constrain_transitions else {}
    model = SequenceCRFTagger(encoder, CRF(data.num_outputs, name="crf", **constraints), name="crf_tagger")
    model.build((None, None))
    return model
