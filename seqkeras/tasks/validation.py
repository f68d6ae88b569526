"""A file task's validation data: a file of its own (`validation_path`) or a seeded share of the training part.

Every task that reads the user's files (conll_file, text_classification_file,
lm_corpus with `corpus: path`, char_lm with `path`, sentence_pairs) takes these
two keys through `ValidationParams`. The validation examples come from the
training part only, after the test split is made, so early stopping (on `val_*`)
and any choice made on validation numbers never see a test example. At most one
of the two keys may be set; a spec that also sets `train.validation_split` is
refused by `spec.checks.check_validation`, which sees both sections.

The two keys came after results existed: a run that sets neither keeps its
resolved spec, and so its run id (`hashed_only_when_set`, read by spec.loader).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar, TypeVar

import numpy as np
from pydantic import Field, model_validator

from seqkeras.errors import SpecError
from seqkeras.registry import Params

Example = TypeVar("Example")

# The validation draw has its own random stream: the test split's draw (default_rng(seed)) stays what it was,
# so a run that adds a validation share tests on exactly the examples it tested on before.
VALIDATION_STREAM = 2


def validation_path_field():
    """The `validation_path` field, declared by each file task beside its other files (so it is listed there)."""
    return Field(None, description="A validation file in the same format as path: val_* curves and early "
                 "stopping (never the test split). At most one of validation_path and validation_share.")


def validation_share_field():
    """The `validation_share` field, declared by each file task after `validation_path`."""
    return Field(None, gt=0, lt=1, description="Share of the training part (never the test split) held out, "
                 "seeded, as validation data for val_* curves and early stopping. At most one of validation_path "
                 "and validation_share.")


class ValidationParams(Params):
    """What a file task with validation data has: the rule between its two keys, which gives it, and their hashing.

    Each task declares the two fields itself (`validation_path_field()`, `validation_share_field()`), after
    its own files, so that the reference lists them there.
    """

    # Left out of the resolved spec (and the run id) while at their default, None: added after results existed.
    hashed_only_when_set: ClassVar[tuple[str, ...]] = ("validation_path", "validation_share")

    @model_validator(mode="after")
    def _one_source_of_validation(self) -> ValidationParams:
        if self.validation_path is not None and self.validation_share is not None:
            raise SpecError("give either task.validation_path (a file) or task.validation_share (a share of the "
                            "training data), not both", path="task.validation_share")
        return self

    def validation_key(self) -> str | None:
        """The key that gives this task's validation data ("task.validation_path", ...), None when none does."""
        if self.validation_path is not None:
            return "task.validation_path"
        if self.validation_share is not None:
            return "task.validation_share"
        return None


def validation_key(params: object) -> str | None:
    """The task key giving a task's own validation data, for any task's params (None for a task without)."""
    return params.validation_key() if isinstance(params, ValidationParams) else None


def hold_out(examples: Sequence[Example], share: float, seed: int, *, what: str) -> tuple[list[Example], list[Example]]:
    """(training, validation): a seeded `share` of `examples` (at least one; at least one left to train on)."""
    if len(examples) < 2:
        raise SpecError(f"{what} has {len(examples)} training example(s); holding out validation data needs at "
                        "least 2", path="task.validation_share")
    order = np.random.default_rng([seed, VALIDATION_STREAM]).permutation(len(examples))
    count = min(max(1, round(len(examples) * share)), len(examples) - 1)
    held = set(order[-count:].tolist())
    # Both parts keep the order they had: the training part is shuffled per epoch by the trainer anyway.
    return ([e for i, e in enumerate(examples) if i not in held], [e for i, e in enumerate(examples) if i in held])


def validation_examples(params: ValidationParams, train: list[Example], seed: int,
                        read: Callable[[str], list[Example]], *, what: str) -> tuple[list[Example], list[Example]]:
    """(training, validation) for a file task: `read(validation_path)`, a share of `train`, or none ([])."""
    if params.validation_path is not None:
        return train, read(params.validation_path)
    if params.validation_share is not None:
        return hold_out(train, params.validation_share, seed, what=what)
    return train, []
