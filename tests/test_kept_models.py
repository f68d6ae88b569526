"""Kept models: every training run keeps its model, and the model read back scores what the run recorded.

One tiny run per model kind (tests/model_kind_specs.py, and seq2seq without attention) through
`seqkeras.run` on TensorFlow, trained once per session (`trained_runs`); `seqkeras.load_model` reads its
folder, and the run's own evaluator, on the test set its task rebuilds from spec.yaml and the seed, gives
the metrics of its metrics.json.
The torch process has its own check (tests/torch_backend/test_kept_models_torch.py).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml

import seqkeras
from seqkeras import catalog
from seqkeras.errors import SpecError
from seqkeras.kept.preprocessing import FILE, KERAS_FILE
from tests.helpers import process_backend, run_cli
from tests.model_kind_specs import CASES, SEQ2SEQ, KindCase
from tests.test_full_disk import FillingDisk, assert_nothing_half_written, one_line_about_it

REPOSITORY = Path(__file__).resolve().parents[1]

CASES_HERE = CASES + [
    KindCase("seq2seq-no-attention", "seq2seq", SEQ2SEQ,
             {"cell": "lstm", "units": 8, "embedding_dim": 4, "attention": "none"},
             ["bleu", "exact_match", "teacher_forced_token_accuracy", "mean_log_prob"]),
]


def run_folder(out: Path, name: str) -> Path:
    (folder,) = [p for p in (out / name).iterdir() if p.is_dir()]
    return folder


def recorded_rows(folder: Path) -> list[dict]:
    record = json.loads((folder / "metrics.json").read_text())
    assert record["status"] == "ok", record.get("error")
    return [row["metrics"] for row in record["rows"]] if "rows" in record else [record["metrics"]]


def timing(name: str) -> bool:
    return name.startswith("seconds_") or "_seconds" in name


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in CASES_HERE])
def test_a_kept_model_scores_what_its_run_recorded(case, trained_runs, tmp_path):
    folder = trained_runs.run_folder(case)
    model_file = catalog.MODELS.get(case.kind).model_file.name  # the file its kind keeps its models in
    assert (folder / model_file).is_file() and (folder / FILE).is_file()
    assert not (folder / ".resume").exists()  # the resume checkpoint is still removed at the end

    kept = seqkeras.load_model(folder)
    assert kept.kind == case.kind and kept.folder == folder
    # The spec.yaml read again is the same run: the same resolved spec, so the same id's hash.
    run = kept.run_spec()
    assert run.run_id.rsplit("_", 1)[1] == folder.name.rsplit("_", 1)[1]
    rows = kept.evaluate(tmp_path / "again")
    recorded = recorded_rows(folder)
    assert len(rows) == len(recorded)
    for row, metrics in zip(rows, recorded):
        compared = {name: value for name, value in metrics.items() if not timing(name)}
        assert compared, metrics
        again = {name: row.metrics[name] for name in compared}
        for name, value in compared.items():
            assert isinstance(value, (int, float)) and math.isfinite(value), (name, value)
            assert again[name] == pytest.approx(value, rel=1e-5, abs=1e-7), (name, value, again[name])
    assert not (tmp_path / "again" / "metrics.json").exists()  # the evaluator's files only


def test_keeping_is_out_of_the_run_id_unless_turned_off(tiny_spec, capsys, tmp_path):
    from seqkeras.spec.loader import load_experiment

    only = ["model.cell=lstm", "seed=0"]
    (kept,) = load_experiment(tiny_spec, only=only).runs
    assert "keep_model" not in kept.resolved["train"]  # committed results keep their run ids
    (off,) = load_experiment(tiny_spec, overrides=["train.keep_model=false"], only=only).runs
    assert off.resolved["train"]["keep_model"] is False and off.run_id != kept.run_id
    code, output, err = run_cli(capsys, "run", tiny_spec, "--out", tmp_path, "--set", "train.keep_model=false",
                                "--only", only[0], "--only", only[1], "--backend", process_backend())
    assert code == 0, output + err
    folder = run_folder(tmp_path, "tiny")
    assert folder.name == off.run_id
    assert not any((folder / name).exists() for name in {FILE, *(kind.model_file.name for kind in catalog.MODELS)})
    with pytest.raises(SpecError, match=f"{FILE} is missing: this run kept no model"):
        seqkeras.load_model(folder)


def test_the_committed_results_keep_their_run_ids():
    """A committed run's spec.yaml, resolved again by today's code, is the same document (no keep_model in its
    train section) and so the same run id; runs whose task gained a parameter since are stale either way."""
    from seqkeras.kept.saving import KeptModel

    same = 0
    for spec_file in sorted(REPOSITORY.glob("results/*/*/spec.yaml"))[:60]:
        spec = yaml.safe_load(spec_file.read_text(encoding="utf-8"))
        if "task" not in spec:
            continue
        try:
            run = KeptModel(None, None, spec, spec_file.parent).run_spec()
        except SpecError:  # a task whose data is not on this machine
            continue
        assert "keep_model" not in run.resolved["train"], spec_file
        if run.resolved == spec:
            assert run.run_id.rsplit("_", 1)[1] == spec_file.parent.name.rsplit("_", 1)[1], spec_file
            same += 1
    assert same >= 5


def test_keras_load_model_works_in_a_fresh_process_once_seqkeras_is_imported(trained_runs, tmp_path):
    """Keras's own load_model, safe_mode on, after `import seqkeras` (which imports no Keras): the custom classes
    (a CRF tagger, an encoder-decoder with attention) are found."""
    cases = [case for case in CASES if case.id in ("tagger-crf", "seq2seq")]
    folders = [trained_runs.run_folder(case) for case in cases]
    probes = {}
    for case, folder in zip(cases, folders):
        kept = seqkeras.load_model(folder)
        data = kept.data()
        x = data.x_test if case.kind != "seq2seq" else {k: v[:4] for k, v in data.x_test.items()}
        x = x[:4] if case.kind != "seq2seq" else x
        probes[str(folder)] = np.asarray(kept.model.predict(x, verbose=0)).tolist()
        np.save(tmp_path / f"{case.id}.npy", x, allow_pickle=True)
    script = textwrap.dedent(f"""
        import sys, json
        import numpy as np
        import seqkeras
        assert "keras" not in sys.modules, "import seqkeras imported Keras"
        import keras
        out = {{}}
        for folder, case in {[(str(f), c.id) for f, c in zip(folders, cases)]!r}:
            model = keras.saving.load_model(folder + "/model.keras")  # safe_mode on: Keras's default
            x = np.load({str(tmp_path)!r} + "/" + case + ".npy", allow_pickle=True)
            x = x.item() if x.dtype == object else x
            out[folder] = np.asarray(model.predict(x, verbose=0)).tolist()
            print(case, type(model).__name__)
        print(json.dumps(out))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                            cwd=REPOSITORY, env={**os.environ, "KERAS_BACKEND": "tensorflow"})
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()
    assert "tagger-crf SequenceCRFTagger" in lines and "seq2seq Seq2SeqModel" in lines, result.stdout
    loaded = json.loads(lines[-1])
    for folder, values in probes.items():
        np.testing.assert_allclose(loaded[folder], values, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- preprocessing


CSV = """text,label
"The film was GREAT, truly!",pos
Dull and slow.,neg
"Great acting; great film",pos
"Émile's film was dull",neg
"slow, SLOW, slow",neg
A great film,pos
great great,pos
"dull... dull",neg
"""


def test_a_kept_text_classifier_encodes_texts_as_its_task_did(write_spec, tmp_path):
    data_file = tmp_path / "reviews.csv"
    data_file.write_text(CSV, encoding="utf-8")
    spec = write_spec(f"""
        version: 1
        name: reviews
        task: {{name: text_classification_file, path: {data_file}, min_count: 1, test_share: 0.25}}
        model: {{kind: classifier, cell: gru, units: 4, embedding_dim: 4}}
        train: {{epochs: 1, batch_size: 4, verbose: 0}}
    """)
    seqkeras.run(spec, out=tmp_path / "out", backend=process_backend())
    kept = seqkeras.load_model(run_folder(tmp_path / "out", "reviews"))
    data = kept.data()
    texts = [text for text, _ in __import__("seqkeras.tasks.files", fromlist=["x"]).read_labelled_texts(
        data_file, "text", "label")]
    from seqkeras.tasks.text import split_examples

    train, test = split_examples([(t, "x") for t in texts], 0.25, kept.spec["seed"], what="the file")
    for part, x in (([t for t, _ in train], data.x_train), ([t for t, _ in test], data.x_test)):
        encoded = kept.encode(part)
        width = max(encoded.ids.shape[1], x.shape[1])
        padded = np.zeros((len(part), width), np.int32)
        padded[:, : encoded.ids.shape[1]] = encoded.ids
        expected = np.zeros_like(padded)
        expected[:, : x.shape[1]] = x
        np.testing.assert_array_equal(padded, expected)  # TextVectorization's lowercasing, punctuation, split
    encoded = kept.encode("GREAT film, zebra!")
    assert encoded.tokens == [["great", "film", "zebra"]] and encoded.unknown == [["zebra"]]
    assert encoded.ids[0, 2] == 1 and encoded.unknown_count == 1
    probabilities = kept.model.predict(encoded.ids, verbose=0)
    assert kept.preprocessing.labels_of(probabilities.argmax(-1))[0] in ("neg", "pos")


def test_a_kept_seq2seq_model_names_its_outputs(trained_runs):
    case = next(case for case in CASES if case.id == "seq2seq")
    kept = seqkeras.load_model(trained_runs.run_folder(case))  # the session's run: read only
    document = kept.preprocessing.document
    assert (document.input.split, document.output.kind, document.output.join) == ("characters", "target", "")
    encoded = kept.encode(["abcd", "dz"])
    assert encoded.tokens == [list("abcd"), list("dz")] and encoded.unknown == [[], ["z"]]
    target = kept.preprocessing.outputs
    ids = [target.index["<s>"], target.index["d"], target.index["c"], target.index["</s>"], target.index["a"]]
    assert kept.preprocessing.tokens_of(ids) == ["d", "c"]
    assert kept.preprocessing.detokenize(["d", "c"]) == "dc"


# --------------------------------------------------------------------------- bad input


@pytest.fixture
def kept_folder(trained_runs):
    """One finished run with its kept model (a classifier), shared: each test that damages it copies it."""
    return trained_runs.run_folder(next(case for case in CASES if case.id == "classifier"))


def damaged(kept_folder: Path, tmp_path: Path) -> Path:
    import shutil

    copy = tmp_path / kept_folder.name
    shutil.copytree(kept_folder, copy)
    return copy


def one_line(error: SpecError) -> str:
    text = str(error)
    assert "\n" not in text and "Traceback" not in text, text
    return text


@pytest.mark.parametrize("damage, expected", [
    ("no folder", "not a run folder"),
    ("not a run folder", "not a run folder (no metrics.json"),
    ("model.keras missing", "model.keras is missing (preprocessing.json names it)"),
    ("model.keras cut short", "model.keras cannot be loaded as a Keras model"),
    ("model.keras a link", "model.keras is a symbolic link"),
    ("preprocessing.json not JSON", "preprocessing.json is not JSON"),
    ("preprocessing.json of another shape", "preprocessing.json: input.split: 'sentencepiece' is not allowed"),
    ("preprocessing.json of an unknown kind", "preprocessing.json: model_kind 'gone' is not a model kind"),
    ("preprocessing.json naming another file", "model_file is 'spec.yaml', but model kind 'classifier' keeps its "
                                               "models in model.keras"),
    ("vocabulary.json a dict", "vocabulary.json is not a vocabulary"),
    ("spec.yaml not YAML", "spec.yaml"),
])
def test_bad_input_is_one_clear_line_naming_the_file(kept_folder, tmp_path, damage, expected):
    folder = damaged(kept_folder, tmp_path)
    if damage == "no folder":
        folder = tmp_path / "nowhere"
    elif damage == "not a run folder":
        folder = tmp_path / "empty"
        folder.mkdir()
    elif damage == "model.keras missing":
        (folder / KERAS_FILE).unlink()
    elif damage == "model.keras cut short":
        data = (folder / KERAS_FILE).read_bytes()
        (folder / KERAS_FILE).write_bytes(data[: len(data) // 2])
    elif damage == "model.keras a link":
        (tmp_path / "elsewhere.keras").write_bytes((folder / KERAS_FILE).read_bytes())
        (folder / KERAS_FILE).unlink()
        (folder / KERAS_FILE).symlink_to(tmp_path / "elsewhere.keras")
    elif damage == "preprocessing.json not JSON":
        (folder / FILE).write_text("{not json")
    elif damage == "preprocessing.json of another shape":
        document = json.loads((folder / FILE).read_text())
        document["input"]["split"] = "sentencepiece"
        (folder / FILE).write_text(json.dumps(document))
    elif damage.startswith("preprocessing.json"):
        document = json.loads((folder / FILE).read_text())
        document.update({"model_kind": "gone"} if "unknown kind" in damage else {"model_file": "spec.yaml"})
        (folder / FILE).write_text(json.dumps(document))
    elif damage == "vocabulary.json a dict":
        (folder / "vocabulary.json").write_text('{"a": 1}')
    elif damage == "spec.yaml not YAML":
        (folder / "spec.yaml").write_text("task: [unclosed\n")
    with pytest.raises(SpecError) as raised:
        seqkeras.load_model(folder)
    assert expected in one_line(raised.value)


def test_a_damaged_ngram_file_is_one_line(tmp_path):
    from seqkeras.models.ngram_lm import NgramLanguageModel

    with pytest.raises(ValueError, match="not a seqkeras n-gram model"):
        NgramLanguageModel.from_json('{"format": "other"}')
    good = {"format": "seqkeras-ngram", "version": 1, "params": {"order": 2}, "vocab_size": 4,
            "counts": {"order": 2, "bos": "<s>", "eos": "</s>", "smoothing": "kneser_ney", "k": 1.0,
                       "discount": 0.75, "counts": {"1": [[[], {"2": 3, "</s>": 1}]],
                                                    "2": [[["<s>"], {"2": 1}], [["2"], {"2": 2, "</s>": 1}]]}}}
    model = NgramLanguageModel.from_json(json.dumps(good))
    assert model.distribution([2])[2] > 0.5
    bad = json.loads(json.dumps(good))
    bad["counts"]["counts"]["2"][0][1]["2"] = -1
    with pytest.raises(ValueError, match="not positive whole numbers"):
        NgramLanguageModel.from_json(json.dumps(bad))
    bad = json.loads(json.dumps(good))
    bad["vocab_size"] = 2
    with pytest.raises(ValueError, match="outside the vocabulary"):
        NgramLanguageModel.from_json(json.dumps(bad))


def test_a_full_disk_at_the_kept_model_fails_that_run_in_one_line(write_spec, capsys, tmp_path, monkeypatch):
    spec = write_spec("""
        version: 1
        name: tiny
        task: {name: delayed_recall, lag: 3, n_train: 64, n_test: 32}
        model: {kind: classifier, cell: gru, units: 4, embedding_dim: 4}
        train: {epochs: 1, batch_size: 16, verbose: 0}
    """)
    out = tmp_path / "out"
    disk = FillingDisk(lambda target: target.name == KERAS_FILE).install(monkeypatch)
    code, output, err = run_cli(capsys, "run", spec, "--out", out, "--backend", process_backend())
    assert code == 1, output + err
    folder = run_folder(out, "tiny")
    assert disk.refused == [str(folder / KERAS_FILE)]
    line = one_line_about_it(output + err)
    assert f": FAILED: no space left on device while writing {folder / KERAS_FILE} (" in line
    assert_nothing_half_written(out)
    assert not (folder / KERAS_FILE).exists() and not (folder / FILE).exists()
    record = json.loads((folder / "metrics.json").read_text())
    assert record["status"] == "failed" and record["traceback"] is None
