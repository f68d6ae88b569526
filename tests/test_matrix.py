"""docs/matrix.md, proven: every model kind × every training option × every way out of a run
(seqkeras/generated_files/matrix.py).

Cheap tier (`make test`): every cell of the matrix is computed again from the tests' own tiny specs
(tests/model_kind_specs.py, scored by their first metric: what the system tier trains) and must say what the
committed page says, from the specs it validates; every kind of the catalog and every option has its cells; every
refusal is one line saying why; export's refusals are kept/export.py's own; and every way out that works is
proven by a system test here (`PROVEN_BY`).

System tier (`make test-system`): each accepted cell is trained (one epoch, a few dozen sequences) and taken out
every way the matrix says works, each a test of its own; a way the matrix refuses outside validation (a file
Keras does not read, a model Keras's export cannot carry) is attempted and must be refused as it says. On torch
(this process's backend): keep, plain Keras in fresh processes on each backend, predict, evaluate, tune. On
TensorFlow (`KERAS_BACKEND=tensorflow`, which `make test-system` runs second; Keras's export runs there): ONNX
and SavedModel, each cell trained again there.

    .venv/bin/python -m pytest -q tests/test_matrix.py                                     # the cheap tier
    .venv/bin/python -m pytest -q --system -m system tests/test_matrix.py -k classifier    # a row's cells
    KERAS_BACKEND=tensorflow .venv/bin/python -m pytest -q --system -m system tests/test_matrix.py
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import seqkeras
from seqkeras import catalog
from seqkeras.generated_files import matrix
from seqkeras.tasks.base import CLASSIFICATION
from tests.helpers import run_cli
from tests.model_kind_specs import CASES
from tests.plain_keras_loading import (
    first_test_inputs,
    kept_model_spec,
    load_in_fresh_process,
    predictions,
    save_inputs,
)
from tests.trained_runs import TrainedRuns, only_run_folder

# --------------------------------------------------------------------------- the cells the tests train


def case_of(row: matrix.Row):
    """The tiny case of tests/model_kind_specs.py a row trains from: of its kind, with its abilities (a CRF
    tagger's case for the CRF row), the case named after the kind first; None for a row without one."""
    kind = catalog.MODELS.get(row.kind)
    fitting = [case for case in CASES if case.kind == row.kind
               and kind.abilities_for(kind.params.model_validate(case.model)) == row.abilities]
    return sorted(fitting, key=lambda case: case.id != row.kind)[0] if fitting else None


def base_of(row: matrix.Row) -> dict | None:
    """A row's tiny spec: its case scored by its first metric alone (no decoders), as tests.plain_keras_loading's
    processes train it; the options are laid over it. (A row without a case: the page's spec, and a failure of
    test_every_model_kind_and_every_option_has_its_cells.)"""
    case = case_of(row)
    return kept_model_spec(case) if case is not None else None


def cell_id(cell: matrix.Cell) -> str:
    return f"{cell.row.id}-{cell.option.name}"


with tempfile.TemporaryDirectory() as scratch:  # the data files the validation reads; the system tier writes its own
    TESTED = matrix.cells(matrix.DataFiles(Path(scratch)), base_of)
BY_ID = {cell_id(cell): cell for cell in TESTED}
BACKENDS = ("tensorflow", "jax", "torch")


def cells_where(way: str, works: bool = True) -> list:
    """As pytest parameters, the tested cells whose `way` works (works=True; a known failure of the suite too, which
    is expected to fail), or those that refuse it (works=False); not the cells whose spec is refused."""
    chosen = []
    for cell in TESTED:
        verdict = cell.ways.get(way)
        if verdict is None or (verdict.works or verdict.failure) != works:
            continue
        marks = [pytest.mark.xfail(strict=True, reason=f"a known failure (matrix.KNOWN_FAILURES: remove it once "
                                                        f"fixed): {verdict.message}")] if verdict.failure else []
        chosen.append(pytest.param(cell_id(cell), id=cell_id(cell), marks=marks))
    return chosen


# --------------------------------------------------------------------------- cheap tier: every cell, validation only


def documented() -> list[matrix.Cell]:
    with tempfile.TemporaryDirectory() as folder:
        return matrix.cells(matrix.DataFiles(Path(folder)))


def test_every_model_kind_and_every_option_has_its_cells():
    """A kind added to the catalog or an option added to the matrix without its cells fails here."""
    kinds = {component.name for component in catalog.MODELS}
    assert {cell.row.kind for cell in TESTED} == kinds
    for row in matrix.rows():
        options = [cell.option.name for cell in TESTED if cell.row == row]
        assert options == [option.name for option in matrix.OPTIONS], row.label
    ways = [way.name for way in matrix.WAYS_OUT]
    for cell in TESTED:
        if cell.accepted.works:
            assert list(cell.ways) == ways, cell_id(cell)
            assert list(cell.objectives) == matrix.objective_candidates(cell.row.problem), cell_id(cell)
        else:
            assert cell.ways == {} and cell.objectives == {}, cell_id(cell)
    # Every row is trained from a tiny case of its own: a kind's, and a variant's of that variant.
    uncased = [row.label for row in matrix.rows() if case_of(row) is None]
    assert uncased == [], f"no case of tests/model_kind_specs.py trains these rows: add one each ({uncased})"


def test_the_page_says_of_each_cell_what_the_tests_tiny_specs_give():
    """docs/matrix.md validates each row's catalog spec; the system tier trains tests/model_kind_specs.py's cases.
    Both say the same of every cell (its verdicts and their reasons), so the page says what the tests prove."""
    def said(cell: matrix.Cell) -> tuple:
        return ((cell.accepted.works, cell.accepted.reason),
                {way: (verdict.works, verdict.reason) for way, verdict in cell.ways.items()},
                {objective: verdict.works for objective, verdict in cell.objectives.items()})

    page = {cell_id(cell): said(cell) for cell in documented()}
    assert {identity: said(cell) for identity, cell in BY_ID.items()} == page


def test_every_refusal_is_one_line_saying_why_and_every_known_failure_names_its_file():
    verdicts = [(f"{cell_id(cell)} {name}", verdict) for cell in TESTED
                for name, verdict in [("spec", cell.accepted), *cell.ways.items(), *cell.objectives.items()]
                if not verdict.works]
    assert verdicts, "the matrix refuses nothing: its options and ways out are not tested against their limits"
    for where, verdict in verdicts:
        assert verdict.message and "\n" not in verdict.message and "Traceback" not in verdict.message, where
        if verdict.failure:  # a bug: where it is (a file of the suite, and its line) and what happens
            assert re.match(r"seqkeras/[\w/]+\.py:\d+", verdict.message), (where, verdict.message)
            continue
        assert matrix.HIDDEN in verdict.message or "/tmp" not in verdict.message, (where, verdict.message)
        reason = verdict.reason.removesuffix("…")
        assert len(reason.split()) >= 3, (where, verdict.reason)
        assert verdict.short or reason in verdict.message, (where, verdict.reason, verdict.message)  # or its own


def test_a_row_accepts_the_same_tuning_objectives_with_each_option():
    """docs/matrix.md lists each row's objectives once: no option changes which the row accepts."""
    for row in matrix.rows():
        accepted = [cell for cell in TESTED if cell.row == row and cell.accepted.works]
        objectives = {cell.option.name: {name for name, verdict in cell.objectives.items() if verdict.works}
                      for cell in accepted}
        assert len({frozenset(names) for names in objectives.values()}) == 1, (row.label, objectives)


def test_exports_refusals_are_kept_exports_own():
    """The matrix decides export from the catalog, as kept/export.py's `_check_exportable` does from a kept model:
    the same decision and the same words for every row (a stand-in holds what it reads of a kept model)."""
    from seqkeras.kept.export import NotExportable, _check_exportable

    for row in matrix.rows():
        stand_in = SimpleNamespace(folder=Path("RUN"), kind=row.kind, model_kind=row.model_kind,
                                   abilities=row.abilities)
        verdict = matrix.export_verdict(row)
        try:
            _check_exportable(stand_in)
        except NotExportable as error:
            assert not verdict.works and str(error) == f"RUN: {verdict.message}", (row.label, str(error))
        else:
            assert verdict.works, (row.label, verdict.message)


def parametrized_cells(test) -> set[str]:
    """The cell ids a test is parametrized over (its `identity` argument)."""
    (mark,) = [mark for mark in test.pytestmark if mark.name == "parametrize" and mark.args[0] == "identity"]
    return {param.values[0] for param in mark.args[1]}


def test_every_way_out_that_works_is_proven_by_a_system_test_of_every_such_cell():
    """PROVEN_BY names, for each way out, the system tests that take a cell out that way: each is marked system
    and parametrized over exactly the cells where the way works (a known failure: expected to fail). A way refused
    outside validation has a test that attempts it and is refused (REFUSAL_PROVEN_BY); a refused spec or tuning
    objective is the validation's own refusal, which the tests above check."""
    assert set(PROVEN_BY) == {way.name for way in matrix.WAYS_OUT}
    for proven, works in ((PROVEN_BY, True), (REFUSAL_PROVEN_BY, False)):
        for way, tests in proven.items():
            wanted = {param.values[0] for param in cells_where(way, works)}
            assert wanted, (way, works)
            for test in tests:
                marks = {mark.name for mark in test.pytestmark}
                assert "system" in marks and "skip" not in marks, test.__name__
                assert parametrized_cells(test) == wanted, (way, test.__name__)
    refused_elsewhere = {way for cell in TESTED for way, verdict in cell.ways.items()
                         if not verdict.works and not verdict.failure and way != "tune"}
    assert refused_elsewhere == set(REFUSAL_PROVEN_BY)


# --------------------------------------------------------------------------- system tier: each cell trained


class CellRuns:
    """The tested cells trained on this process's backend, each once per session (tests/trained_runs.py), their
    data files in one folder of the session."""

    def __init__(self, root: Path, backend: str):
        self.runs = TrainedRuns(root, backend)
        (root / "data").mkdir(exist_ok=True)
        self.data = matrix.DataFiles(root / "data")

    def spec(self, cell: matrix.Cell) -> dict:
        return matrix.cell_spec(cell.row, cell.option, self.data, base_of(cell.row))

    def experiment(self, spec: dict) -> Path:
        """The results folder of `spec`, trained on first use; every run of it finished."""
        folder = self.runs.experiment(spec, plots=False)
        runs = pd.read_csv(folder / "runs.csv")
        failed = runs[runs["status"] != "ok"]
        assert failed.empty, failed.get("error", failed).tolist()
        return folder

    def run_folder(self, cell: matrix.Cell) -> Path:
        return only_run_folder(self.experiment(self.spec(cell)))


@pytest.fixture(scope="session")
def cell_runs(tmp_path_factory):
    import keras

    return CellRuns(tmp_path_factory.mktemp(f"matrix-{keras.backend.backend()}"), keras.backend.backend())


def leaves(mapping: dict, prefix: str = "") -> dict:
    """A nested mapping's leaves by dotted key."""
    found = {}
    for key, value in mapping.items():
        if isinstance(value, dict) and value:
            found |= leaves(value, f"{prefix}{key}.")
        else:
            found[f"{prefix}{key}"] = value
    return found


def texts_for(kept) -> list[str]:
    """Two inputs of the kind the run reads: steps of features, or words (pieces, characters) of its vocabulary."""
    rule = kept.preprocessing.document.input
    if rule.split == "features":
        return [" ".join(",".join(["0.5"] * rule.features) for _ in range(4)), json.dumps([[0.25] * rule.features])]
    words = [token.strip("▁#") for token in kept.preprocessing.vocabulary.tokens]
    words = [word for word in words if re.fullmatch(r"\w+", word)]  # not <pad>, <unk>, [UNK], nor a space
    return [" ".join(words[:3]), words[3]]


@pytest.mark.system
@pytest.mark.parametrize("identity", cells_where("keep"))
def test_a_cell_keeps_its_model_with_the_option_in_its_spec(identity, cell_runs):
    cell = BY_ID[identity]
    folder = cell_runs.run_folder(cell)
    assert (folder / "preprocessing.json").is_file() and (folder / cell.row.model_kind.model_file.name).is_file()
    kept = seqkeras.load_model(folder)
    assert kept.kind == cell.row.kind
    # What the option laid over the spec is what the run was trained with (its spec.yaml, resolved).
    base, laid = leaves(matrix.cell_spec(cell.row, matrix.OPTIONS[0], cell_runs.data, base_of(cell.row))), \
        leaves(cell_runs.spec(cell))
    saved = leaves(kept.spec)
    for key, value in laid.items():
        if key != "name" and base.get(key) != value:
            assert saved.get(key) == value, (key, saved.get(key), value)


KERAS_ALONE, AFTER_SEQKERAS = "keras alone", "after import seqkeras"


@pytest.fixture(scope="session")
def plain_keras_loads(request, cell_runs, tmp_path_factory):
    """keras.saving.load_model in fresh processes, of every cell this session's plain-Keras tests take: on each
    backend, one process loads with Keras alone the files that name none of the suite's classes, another the others
    after `import seqkeras` (each backend's two side by side with the other backends'). By backend and way
    (KERAS_ALONE, AFTER_SEQKERAS), that process's result; by model file, its way and the kept model's predictions in
    this process."""
    from tests.test_plain_keras_models import suite_names

    wanted = {item.callspec.params["identity"] for item in request.session.items
              if item.originalname == "test_plain_keras_loads_a_cells_model_on_each_backend"}
    scratch = tmp_path_factory.mktemp("plain-keras")
    models, expected = {KERAS_ALONE: [], AFTER_SEQKERAS: []}, {}
    for index, identity in enumerate(sorted(wanted)):
        folder = cell_runs.run_folder(BY_ID[identity])
        kept = seqkeras.load_model(folder)
        x = first_test_inputs(kept)
        model_file = str(folder / "model.keras")
        way = AFTER_SEQKERAS if suite_names(model_file) else KERAS_ALONE
        expected[model_file] = way, predictions(kept.model, x)
        models[way].append({"file": model_file, "inputs": str(save_inputs(x, scratch / f"{index}.npz"))})
    installed = [backend for backend in BACKENDS if importlib.util.find_spec(backend) is not None]
    processes = [(backend, way) for backend in installed for way in models if models[way]]

    def load(process: tuple[str, str]) -> dict:
        backend, way = process
        folder = scratch / way.replace(" ", "-")
        folder.mkdir(exist_ok=True)
        return load_in_fresh_process(backend, models[way], folder, import_seqkeras=way == AFTER_SEQKERAS)

    with ThreadPoolExecutor(len(installed)) as pool:
        loaded = dict(zip(processes, pool.map(load, processes)))
    return loaded, expected


@pytest.mark.system
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("identity", cells_where("plain_keras"))
def test_plain_keras_loads_a_cells_model_on_each_backend(identity, backend, cell_runs, plain_keras_loads):
    """Keras alone reads a file that names none of the suite's classes (a Bidirectional layer or a keras-hub layer
    may still import TensorFlow there: Keras's own doing); after `import seqkeras`, no other backend's framework is
    imported either."""
    loaded, expected = plain_keras_loads
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed here: no process on it can load a model")
    model_file = str(cell_runs.run_folder(BY_ID[identity]) / "model.keras")
    way, predicted = expected[model_file]
    process = loaded[backend, way]
    result = process["models"][model_file]
    assert result["seqkeras_imported"] == (way == AFTER_SEQKERAS), (way, result["seqkeras_imported"])
    if way == AFTER_SEQKERAS:
        assert process["frameworks_added"] == [], process["frameworks_added"]
    assert result["warnings"] == [], result["warnings"]
    np.testing.assert_allclose(result["predictions"], predicted, rtol=1e-5, atol=1e-5)


@pytest.mark.system
@pytest.mark.parametrize("identity", cells_where("plain_keras", works=False))
def test_plain_keras_refuses_a_model_kept_in_another_file(identity, cell_runs):
    import keras

    cell = BY_ID[identity]
    model_file = cell_runs.run_folder(cell) / cell.row.model_kind.model_file.name
    assert model_file.is_file() and not (model_file.parent / "model.keras").exists()
    with pytest.raises(ValueError):  # Keras's own refusal of a file that is not its format
        keras.saving.load_model(model_file)


@pytest.mark.system
@pytest.mark.parametrize("identity", cells_where("predict"))
def test_seqkeras_predict_gives_a_row_per_input(identity, cell_runs, capsys):
    folder = cell_runs.run_folder(BY_ID[identity])
    texts = texts_for(seqkeras.load_model(folder))
    capsys.readouterr()
    code, out, err = run_cli(capsys, "predict", folder, "--text", *texts, "--format", "jsonl")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert [row["input"] for row in rows] == texts, rows
    # Each row has what the model gave it (a label, tags, a value, a continuation, which may be empty: an LM may end
    # its unit at once).
    predicted = [{key: value for key, value in row.items() if key not in ("input", "unknown")} for row in rows]
    assert all(row and None not in row.values() for row in predicted), rows


@pytest.mark.system
@pytest.mark.parametrize("identity", cells_where("evaluate"))
def test_seqkeras_evaluate_adds_a_metric_and_a_decoder_to_the_record(identity, cell_runs, tmp_path, capsys):
    from seqkeras.decoding.decoders import decoder_label, parse_decoder

    cell = BY_ID[identity]
    spec = cell_runs.spec(cell)
    cell_runs.experiment(spec)  # trained, and finished
    experiment = cell_runs.runs.copied_experiment(spec, tmp_path, plots=False)
    added = matrix.evaluation_additions(spec, cell.row.problem)
    labels = [decoder_label(parse_decoder(decoder)) for decoder in added["decoders"]]
    arguments = [*(["--metrics", *added["metrics"]] if added["metrics"] else []),
                 *(["--decoders", *labels] if labels else [])]
    capsys.readouterr()
    code, out, err = run_cli(capsys, "evaluate", experiment, *arguments)
    assert code == 0, err
    runs = pd.read_csv(experiment / "runs.csv")
    for metric in added["metrics"]:
        assert metric in runs.columns and runs[metric].map(lambda value: math.isfinite(value)).all(), list(runs)
    for label in labels:
        assert label in runs["decoder"].tolist(), runs["decoder"].tolist()


@pytest.mark.system
@pytest.mark.parametrize("identity", cells_where("tune"))
def test_a_cell_is_tuned_on_each_objective_it_accepts(identity, cell_runs):
    """A study of 2 trials on an objective the matrix accepts for the cell, then its best setting's run: on each
    objective for a row's spec as it is (option none), on the first for the row with an option (which objectives a
    row accepts does not depend on the option: `test_a_row_accepts_the_same_tuning_objectives_with_each_option`).
    Every objective of every option would be half of this tier's time, about 14 minutes of CI, for no new cell."""
    cell = BY_ID[identity]
    objectives = [objective for objective, verdict in cell.objectives.items() if verdict.works]
    assert objectives, identity
    for objective in objectives if cell.option.name == "none" else objectives[:1]:
        tuned = matrix.tuning_spec(cell_runs.spec(cell), objective, cell.row.problem, cell_runs.data)
        assert tuned is not None, (identity, objective, "refused with the session's data files")
        trials = pd.read_csv(cell_runs.experiment(tuned) / "tuning" / "trials.csv")
        assert len(trials) == matrix.TUNING["trials"] and (trials["state"] == "complete").all(), (objective, trials)
        assert trials["objective"].map(math.isfinite).all(), (objective, trials["objective"].tolist())


# ---- on TensorFlow, where Keras's export runs (each cell trained again in that process)


def onnx_runtime():
    pytest.importorskip("onnxruntime", reason="the export extra is not installed (pip install -r "
                                              "requirements-export.txt)")
    pytest.importorskip("tf2onnx", reason="the export extra is not installed (pip install -r requirements-export.txt)")


@pytest.mark.system
@pytest.mark.tensorflow
@pytest.mark.parametrize("identity", cells_where("onnx"))
def test_an_onnx_export_runs_in_onnx_runtime_as_the_kept_model_predicts(identity, cell_runs, tmp_path, capsys):
    onnx_runtime()
    from tests.test_export_model import greedy_onnx_loop, onnx_outputs

    folder = cell_runs.run_folder(BY_ID[identity])
    kept = seqkeras.load_model(folder)
    seqkeras.export_model(folder, "onnx", tmp_path / "onnx")
    manifest = json.loads((tmp_path / "onnx" / "export.json").read_text())
    texts = texts_for(kept)
    if "loop" in manifest:  # an encoder-decoder, driven greedily: what `seqkeras predict` decodes by default
        source = kept.encode(texts).ids.astype("int32")
        chosen, _, _ = greedy_onnx_loop(tmp_path / "onnx", source, manifest["loop"]["max_output_length"])
        served = [kept.preprocessing.detokenize(kept.preprocessing.tokens_of(row)) for row in chosen]
        assert served == kept.predict(texts)["output"].tolist(), texts
        return
    (graph,) = manifest["graphs"].values()
    (name, interface), = graph["inputs"].items()
    x = first_test_inputs(kept)
    (served,) = onnx_outputs(tmp_path / "onnx" / "model.onnx", {name: x.astype(interface["dtype"])}).values()
    np.testing.assert_allclose(served, kept.model.predict(x, verbose=0), atol=1e-4)
    if kept.problem == CLASSIFICATION:  # the label `seqkeras predict` gives each text
        ids = kept.encode(texts).ids.astype(interface["dtype"])
        (probabilities,) = onnx_outputs(tmp_path / "onnx" / "model.onnx", {name: ids}).values()
        capsys.readouterr()
        code, out, err = run_cli(capsys, "predict", folder, "--text", *texts, "--format", "jsonl")
        assert code == 0, err
        labels = [json.loads(line)["label"] for line in out.splitlines() if line.strip()]
        assert kept.preprocessing.labels_of(probabilities.argmax(-1)) == labels


@pytest.mark.system
@pytest.mark.tensorflow
@pytest.mark.parametrize("identity", cells_where("savedmodel"))
def test_a_savedmodel_export_is_called_by_tensorflow_as_the_kept_model_predicts(identity, cell_runs, tmp_path):
    import tensorflow as tf

    from tests.test_export_model import first_step

    folder = cell_runs.run_folder(BY_ID[identity])
    kept = seqkeras.load_model(folder)
    exported = seqkeras.export_model(folder, "savedmodel", tmp_path / "savedmodel")
    if exported.graphs != ["model"]:  # an encoder-decoder: its encoder, then one step, as the model's own step
        source, step_model, tokens, state = first_step(kept)
        expected, _ = step_model.step(tokens, state)
        encoder, step = (tf.saved_model.load(str(tmp_path / "savedmodel" / graph)) for graph in exported.graphs)
        served = step.serve({"token": tf.constant(tokens), **encoder.serve({"source": tf.constant(source)})})
        np.testing.assert_allclose(served["log_probabilities"].numpy(), expected, atol=1e-4)
        return
    x = first_test_inputs(kept)
    loaded = tf.saved_model.load(str(tmp_path / "savedmodel" / "model"))  # held: its variables live as long
    np.testing.assert_allclose(loaded.serve(tf.constant(x)).numpy(), kept.model.predict(x, verbose=0), atol=1e-4)


@pytest.mark.system
@pytest.mark.tensorflow
@pytest.mark.parametrize("identity", cells_where("onnx", works=False))
def test_an_export_the_matrix_refuses_is_refused_in_its_words(identity, cell_runs, tmp_path):
    from seqkeras.kept.export import NotExportable

    cell = BY_ID[identity]
    folder = cell_runs.run_folder(cell)
    for format, way in (("onnx", "onnx"), ("savedmodel", "savedmodel")):
        with pytest.raises(NotExportable) as refused:
            seqkeras.export_model(folder, format, tmp_path / format)
        assert str(refused.value).endswith(cell.ways[way].message), str(refused.value)
        assert not (tmp_path / format).exists()


# Each way out → the system tests that prove its `yes` cells (PROVEN_BY), and those that attempt a way the matrix
# refuses outside validation (REFUSAL_PROVEN_BY): test_every_way_out_that_works_is_proven_... checks both.
PROVEN_BY = {
    "keep": [test_a_cell_keeps_its_model_with_the_option_in_its_spec],
    "plain_keras": [test_plain_keras_loads_a_cells_model_on_each_backend],
    "predict": [test_seqkeras_predict_gives_a_row_per_input],
    "evaluate": [test_seqkeras_evaluate_adds_a_metric_and_a_decoder_to_the_record],
    "onnx": [test_an_onnx_export_runs_in_onnx_runtime_as_the_kept_model_predicts],
    "savedmodel": [test_a_savedmodel_export_is_called_by_tensorflow_as_the_kept_model_predicts],
    "tune": [test_a_cell_is_tuned_on_each_objective_it_accepts],
}
REFUSAL_PROVEN_BY = {
    "plain_keras": [test_plain_keras_refuses_a_model_kept_in_another_file],
    "onnx": [test_an_export_the_matrix_refuses_is_refused_in_its_words],
    "savedmodel": [test_an_export_the_matrix_refuses_is_refused_in_its_words],
}
