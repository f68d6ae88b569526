"""The step model a decoder drives over a language model comes from its model kind (`ModelKind.step_model`).

`lm` and `transformer` declare the step models that carry their state (tests/test_cached_step_models.py checks
that they give the prefix model's numbers); a kind that declares none is decoded through the prefix, and a
declared step model on a model of another structure is refused, never replaced by another.
"""

from __future__ import annotations

import dataclasses

import keras
import pytest

from seqkeras import catalog
from seqkeras.decoding.cached_step_models import CachedTransformerStepModel, RecurrentStepModel
from seqkeras.evaluation import language_model
from seqkeras.evaluation.generation import PromptStepModel, prompt_step_model
from seqkeras.models import nplm, recurrent
from seqkeras.spec.loader import build_experiment
from seqkeras.spec.runs import ResolvedComponent
from tests.stepping import VOCABULARY, lm_data


def test_the_kinds_that_carry_a_state_declare_their_step_model_and_the_others_none():
    declared = {kind.name: kind.step_model for kind in catalog.MODELS if kind.problem == "language_modeling"}
    assert declared == {"lm": RecurrentStepModel, "ngram": None, "nplm": None,
                        "transformer": CachedTransformerStepModel}


def test_without_a_declared_step_model_a_prompt_is_continued_through_the_prefix():
    keras.utils.set_random_seed(0)
    model = recurrent.build_lm(recurrent.LanguageModelParams(cell="lstm", units=4, embedding_dim=3), lm_data())
    assert type(prompt_step_model(model, [3, 4], VOCABULARY, window=8)) is PromptStepModel  # not recognized
    assert isinstance(prompt_step_model(model, [3, 4], VOCABULARY, window=8, own_step_model=RecurrentStepModel),
                      RecurrentStepModel)
    other = nplm.build(nplm.NplmParams(order=3, embedding_dim=4, units=5), lm_data())
    with pytest.raises(ValueError, match="not an Embedding → recurrent layers → Dense chain"):
        prompt_step_model(other, [3, 4], VOCABULARY, window=8, own_step_model=RecurrentStepModel)


def test_the_language_model_evaluator_decodes_through_the_kinds_step_model(tmp_path):
    spec = {"version": 1, "name": "stepped", "seeds": [0],
            "task": {"name": "char_lm", "seq_length": 8, "n_train": 8, "n_test": 4},
            "model": {"kind": "lm", "cell": "gru", "units": 4, "embedding_dim": 3},
            "evaluate": {"generate": {"prompts": ["a", "b"], "length": 3}, "decoders": [{"name": "greedy"}]}}
    (run,) = build_experiment(spec, source="stepped", overrides=[]).runs
    built = []

    def counted(*args, **kwargs):
        built.append(RecurrentStepModel(*args, **kwargs))
        return built[-1]

    kind = dataclasses.replace(run.model.component, step_model=counted)
    run = dataclasses.replace(run, model=ResolvedComponent(kind, run.model.params))
    data = run.task.component.load()(run.task.params, run.seed)
    keras.utils.set_random_seed(0)
    rows = language_model.evaluate(run.model.component.load()(run.model.params, data), data, run, tmp_path)
    assert len(rows) == 1 and (tmp_path / "samples.csv").is_file()
    assert len(built) == 4  # greedy's reference and the greedy decoder, for each of the 2 prompts
