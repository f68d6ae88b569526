"""What a trained model predicted on a test set: the one input every metric of evaluation/ reads.

Training makes it (`trainer.predict`: probabilities, or a CRF's decoded path,
with the mask of real tokens); evaluation only reads it, so the type lives with
its maker and the metrics import it from here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Predictions:
    """What a metric sees. For sequences, `mask` marks the real tokens."""

    probabilities: np.ndarray  # [N, C] or [N, L, C]
    targets: np.ndarray  # [N] or [N, L]
    mask: np.ndarray | None = None  # [N, L] bool for sequence outputs
    predicted: np.ndarray | None = None  # ids, when decoding is not argmax (e.g. a CRF's Viterbi path)
    labels: list[str] | None = None  # names of the output ids (tags) where they matter

    def predicted_ids(self) -> np.ndarray:
        return self.predicted if self.predicted is not None else self.probabilities.argmax(axis=-1)

    def valid(self) -> np.ndarray:
        return self.mask if self.mask is not None else np.ones(self.targets.shape, dtype=bool)
