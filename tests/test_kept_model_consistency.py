"""A kept model whose preprocessing does not fit it is refused when loaded, in one line naming the file.

Someone else's run folder, or one put together from several runs: fewer labels than the model's outputs (or more,
or none), a vocabulary larger than its embedding, a target vocabulary without the start or end token, another
run's model file, a preprocessing.json with a value of the wrong type. Each is a copy of one of the session's tiny
runs (`trained_runs`: no training here) with one file changed; `seqkeras.load_model` refuses it (kept.consistency,
`Preprocessing.inconsistency`) where it used to load it and fail in the middle of a prediction, and
`seqkeras predict` prints that one line.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import seqkeras
from seqkeras.errors import SpecError
from seqkeras.kept.preprocessing import FILE
from tests.helpers import run_cli
from tests.model_kind_specs import CASES

CASE = {case.id: case for case in CASES}


@pytest.fixture
def copy_run(trained_runs, tmp_path):
    """A copy of a kind's run folder (the session's, trained once), for a test that changes a file of it."""

    def copy(case_id: str, name: str = "run") -> Path:
        destination = tmp_path / name
        shutil.copytree(trained_runs.run_folder(CASE[case_id]), destination)
        return destination

    return copy


def edit_json(path: Path, change) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    changed = change(document)
    path.write_text(json.dumps(document if changed is None else changed), encoding="utf-8")


def set_output(key, value):
    def change(document):
        document["output"][key] = value

    return change


def refused(folder: Path) -> str:
    with pytest.raises(SpecError) as error:
        seqkeras.load_model(folder)
    message = str(error.value)
    assert "\n" not in message, message
    return message


LABELS = ["SA", "SB", "SC", "SD"]  # delayed_recall's four classes, as the classifier case's run names them


@pytest.mark.parametrize("labels, named", [(LABELS[:2], 2), (LABELS + ["SE", "SF"], 6)], ids=["fewer", "more"])
def test_labels_other_than_the_models_outputs_are_refused_naming_both(copy_run, labels, named):
    folder = copy_run("classifier")
    outputs = len(json.loads((folder / FILE).read_text())["output"]["labels"])
    edit_json(folder / FILE, set_output("labels", labels[:named]))
    assert refused(folder) == (f"{folder / 'model.keras'}: the model has {outputs} outputs but {FILE} names "
                               f"{named} labels")


@pytest.mark.parametrize("labels", [None, []], ids=["none", "empty"])
def test_a_classifier_without_labels_is_refused(copy_run, labels):
    folder = copy_run("classifier")
    edit_json(folder / FILE, set_output("labels", labels))
    assert refused(folder) == f"{folder / FILE}: output.labels names no labels"


def test_a_crf_taggers_tags_must_be_its_crfs(copy_run):
    folder = copy_run("tagger-crf")
    edit_json(folder / FILE, lambda document: document["output"].update(labels=document["output"]["labels"][:3]))
    assert refused(folder).endswith("model.keras: the model has 6 outputs but preprocessing.json names 3 tags "
                                    "(output.labels)")


@pytest.mark.parametrize("case_id, model_file", [("classifier", "model.keras"), ("ngram", "model.ngram.json"),
                                                  ("seq2seq", "model.keras")])
def test_a_vocabulary_larger_than_the_embedding_is_refused(copy_run, case_id, model_file):
    folder = copy_run(case_id)
    tokens = json.loads((folder / "vocabulary.json").read_text())
    (folder / "vocabulary.json").write_text(json.dumps(tokens + [f"extra{index}" for index in range(300)]))
    assert refused(folder) == (f"{folder / model_file}: the model takes {len(tokens)} token ids but "
                               f"vocabulary.json has {len(tokens) + 300} tokens")


@pytest.mark.parametrize("token, which", [("<s>", "start"), ("</s>", "end")])
def test_a_target_vocabulary_without_the_start_or_end_token_is_refused(copy_run, token, which):
    folder = copy_run("seq2seq")
    edit_json(folder / "target_vocabulary.json", lambda tokens: [t for t in tokens if t != token])
    assert refused(folder) == (f"{folder / FILE}: target_vocabulary.json has no {which} token {token!r} "
                               f"(output.{which})")


def test_another_kinds_model_is_refused_by_the_kind_named(copy_run):
    seq2seq, classifier = copy_run("seq2seq"), copy_run("classifier", "classifier")
    shutil.copy(classifier / "model.keras", seq2seq / "model.keras")
    assert refused(seq2seq) == (f"{seq2seq / 'model.keras'}: not a seq2seq model as {FILE} says (a Functional, "
                                "not an encoder-decoder (Seq2SeqModel))")


def test_another_runs_model_of_other_sizes_is_refused(copy_run):
    tagger, classifier = copy_run("tagger"), copy_run("classifier", "classifier")
    shutil.copy(classifier / "model.keras", tagger / "model.keras")
    assert "model.keras: the model takes" in refused(tagger)


def test_a_softmax_taggers_model_where_the_spec_says_crf_is_refused(copy_run):
    """Both taggers read the same vocabulary and tags: only the CRF's Viterbi method tells them apart."""
    crf, softmax = copy_run("tagger-crf"), copy_run("tagger", "softmax")
    shutil.copy(softmax / "model.keras", crf / "model.keras")
    assert refused(crf) == (f"{crf / 'model.keras'}: the model has no predict_tags(), which a tagger model of these "
                            "parameters has (spec.yaml's model section): it is another run's model")


def test_a_model_kind_of_another_problem_is_refused(copy_run):
    folder = copy_run("classifier")
    edit_json(folder / FILE, lambda document: document.update(model_kind="tagger"))
    assert refused(folder) == (f"{folder / FILE}: model_kind 'tagger' solves tagging, but its problem is "
                               "classification")


def test_a_context_beyond_the_position_table_is_refused(copy_run):
    folder = copy_run("transformer")
    edit_json(folder / FILE, set_output("context", 10_000))
    assert refused(folder).endswith("model.keras: the model reads at most 12 tokens (its position table) but "
                                    "preprocessing.json's output.context is 10000")


def test_features_other_than_the_regressors_are_refused(copy_run):
    folder = copy_run("regressor")
    edit_json(folder / FILE, lambda document: document["input"].update(features=3))
    assert refused(folder).endswith("model.keras: the model reads 2 features per step but preprocessing.json's "
                                    "input.features is 3")


@pytest.mark.parametrize("key, value, expected", [
    ("context", "12", "output.context: "),
    ("max_output_length", True, "output.max_output_length: "),
    ("max_output_length", 0, "output.max_output_length is 0, not a length (1 or more)"),
    ("labels", ["a"], "output.labels is set, but a seq2seq model's outputs are no labels"),
    ("kind", "label", "output.kind is 'label', but a seq2seq model's outputs are 'target'"),
], ids=["a number as text", "true as a number", "a length of 0", "labels", "another problem's output"])
def test_a_preprocessing_file_with_a_wrong_value_is_one_line_naming_it(copy_run, key, value, expected):
    folder = copy_run("seq2seq")
    edit_json(folder / FILE, set_output(key, value))
    message = refused(folder)
    assert message.startswith(str(folder / FILE)) and expected in message, message


def test_an_input_longer_than_the_position_table_is_refused_by_predict(trained_runs):
    kept = seqkeras.load_model(trained_runs.run_folder(CASE["transformer_classifier"]))
    assert kept.shape.positions is not None
    with pytest.raises(SpecError, match=rf"input 2 .* has 200 tokens; this model reads at most {kept.shape.positions}"):
        kept.predict(["SA", "SA " * 200])


def test_predict_prints_one_line_for_a_model_that_does_not_fit(copy_run, capsys):
    folder = copy_run("classifier")
    edit_json(folder / FILE, set_output("labels", LABELS[:2]))
    capsys.readouterr()  # what training the session's run printed, when this test was the first to ask for it
    code, out, err = run_cli(capsys, "predict", folder, "--text", "SA SB")
    assert code == 2 and out == "", (out, err)
    assert err.strip() == f"error: {folder / 'model.keras'}: the model has 4 outputs but {FILE} names 2 labels"
