"""A model kind declares how its models are kept and read back (`registry.ModelFile`); kept/saving only asks it.

Keras's native format is the default; the `ngram` kind declares its counts' JSON. A kind added with its own
`ModelFile` is written and read through it, with no other edit.
"""

from __future__ import annotations

import dataclasses
import gzip

import pytest

import seqkeras
from seqkeras import catalog
from seqkeras.errors import SpecError
from seqkeras.models import ngram_lm
from seqkeras.registry import KERAS_NATIVE, ModelFile
from tests.helpers import process_backend
from tests.model_kind_specs import CASES

NGRAM = next(case for case in CASES if case.kind == "ngram")


def run_folders(results):
    return [path for path in results.iterdir() if path.is_dir()]


def test_every_kind_declares_its_file_and_only_ngram_keeps_no_keras_model():
    files = {kind.name: kind.model_file for kind in catalog.MODELS}
    assert files.pop("ngram") is ngram_lm.MODEL_FILE and ngram_lm.MODEL_FILE.name == "model.ngram.json"
    assert set(files.values()) == {KERAS_NATIVE} and KERAS_NATIVE.name == "model.keras"


def test_a_damaged_ngram_file_is_one_line_naming_it(trained_runs, tmp_path):
    folder = trained_runs.copied_run_folder(NGRAM, tmp_path)  # the session's ngram run, copied: this test damages it
    assert type(seqkeras.load_model(folder).model) is ngram_lm.NgramLanguageModel
    (folder / "model.ngram.json").write_text('{"format": "other"}')
    with pytest.raises(SpecError, match=r"model.ngram.json cannot be loaded as an n-gram model \(ValueError: not a "
                                        "seqkeras n-gram model"):
        seqkeras.load_model(folder)


def gzipped(model) -> bytes:
    return gzip.compress(model.to_json().encode("utf-8"))


def ungzipped(file) -> ngram_lm.NgramLanguageModel:
    return ngram_lm.NgramLanguageModel.from_json(gzip.decompress(file.read()).decode("utf-8"))


@pytest.fixture
def gzipped_ngram():
    """A kind `ngram_gz`: the ngram kind, its counts kept gzipped in a file of its own."""
    kind = dataclasses.replace(catalog.MODELS.get("ngram"), name="ngram_gz",
                               model_file=ModelFile("model.ngram.json.gz", "gzipped n-gram counts", gzipped, ungzipped))
    catalog.MODELS.add(kind)
    try:
        yield kind
    finally:
        catalog.MODELS.remove(kind.name)


def test_a_kind_with_its_own_model_file_is_kept_and_loaded_through_it(gzipped_ngram, tmp_path):
    case = dataclasses.replace(NGRAM, id="gz", kind=gzipped_ngram.name)
    seqkeras.run(case.spec(), out=tmp_path, backend=process_backend())
    (folder,) = run_folders(tmp_path / "kind-gz")
    assert (folder / "model.ngram.json.gz").is_file() and not (folder / "model.ngram.json").exists()
    kept = seqkeras.load_model(folder)
    assert kept.kind == "ngram_gz" and kept.preprocessing.document.model_file == "model.ngram.json.gz"
    assert type(kept.model) is ngram_lm.NgramLanguageModel
    (output,) = kept.predict(["the "], length=3)["output"]
    assert isinstance(output, str) and output  # the counts read back continue a prompt
