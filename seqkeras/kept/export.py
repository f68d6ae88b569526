"""A kept model exported for serving outside Python and the suite: `seqkeras export-model RUN --format onnx|savedmodel
--output DIR` (`export_model`).

Each graph is written by Keras's own `model.export` (ONNX through tf2onnx; a TensorFlow SavedModel), on the
TensorFlow backend, whose export keeps the batch and the sequence length dynamic (the torch backend's ONNX
export fixes them to 1). Beside the graphs, what turns a text into their inputs and their outputs back into
words: the run's preprocessing.json and the vocabularies it names, copied as they are (kept/preprocessing.py
says what each field means), and export.json, which names the graphs, their inputs and outputs:

    DIR/model.onnx | DIR/model/                  the model's forward pass: token ids [batch, length] → its outputs
    DIR/encoder.onnx, DIR/decoder_step.onnx      an encoder-decoder: the two graphs a serving loop calls
      (| DIR/encoder/, DIR/decoder_step/)        (export.json's `loop` says how)
    DIR/preprocessing.json, DIR/vocabulary.json (, DIR/target_vocabulary.json)
    DIR/export.json
    DIR/tokenizer.json                           a bpe run's tokenizer as the `tokenizers` package saves it
    DIR/serve.py                                 (ONNX) an example server: python serve.py "a text"

export.json's `tokenizer` names the run's subword tokenizer in its library's format, where it has one (bpe:
tokenizer.json, the tokenizer the run splits with; sentencepiece_*: sentencepiece.model; wordpiece: keras-hub
reads vocabulary.json), and how to read it; serve.py (kept/serving_example.py) runs an ONNX export with numpy
and onnxruntime alone and prints what `seqkeras predict` would: a classifier's label, an encoder-decoder's
greedy output.

An encoder-decoder's loop: `encoder(source)` gives the memory (with attention) and the decoder's first states;
then, from `output.start`, each `decoder_step(token, memory..., states...)` gives `log_probabilities` over the
target vocabulary (and, with attention, its weights over the source) and the next states, `next_<name>` for
the input `<name>` they replace, until `output.end` or `output.max_output_length` tokens. export.json's `loop`
names them: `memory` (the encoder's outputs every step reads unchanged), `states` (input → the output that
replaces it). A recurrent decoder's states are its layers' (layer<n>_h, layer<n>_c); a Transformer's
(`transformer_seq2seq`, models/transformer_seq2seq_graphs.py) are each block's self-attention key/value cache,
layer<n>_self_cache [batch, 2, positions, heads, head_dim], and the position the step writes, `index` [batch];
its memory is the source's mask and each block's cross-attention cache (the source's keys and values), and
`loop.max_steps` (its caches' length) bounds the steps.

In an ONNX graph every dimension is a size or a name: `batch`, and `length` (a model's) or `source_length` (an
encoder-decoder's), where tf2onnx would write unk__<n>. An encoder-decoder's inputs and outputs are named as
above; a model's are its inputs' names, and its one output is `output_0` (not tf2onnx's Identity:0).

A kind whose model Keras's export cannot carry is refused in one line saying why (`NotExportable`): an n-gram
model is counts, not a graph; a CRF tagger decides its tags by Viterbi decoding outside its forward pass.

DIR is the folder the user names, resolved once (results/removal.py). A folder that exists and holds anything is
refused unless `overwrite`, and never replaced when it is the current folder or one above it, a results folder
of the suite, or holds the run being exported. The export is written into a sibling folder first and swapped
into place at the end, so DIR never holds half an export and what it held is removed only once the export is in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import keras

from seqkeras.backends.runtime import quiet_stderr
from seqkeras.errors import SpecError
from seqkeras.kept.preprocessing import FILE, KERAS_FILE
from seqkeras.kept.saving import KeptModel, load_model
from seqkeras.kept.serving_example import tokenizer_files, write_script
from seqkeras.decoding.protocol import NEXT
from seqkeras.results import files, removal

FORMATS = {"onnx": "onnx", "savedmodel": "tf_saved_model"}  # the command's name → Keras's export format
MANIFEST = "export.json"


class NotExportable(SpecError):
    """A kept model that Keras's export cannot carry, and why (one line)."""


@dataclass
class Exported:
    """What `export_model` wrote: the folder, its graphs (files or folders, by name) and whether it replaced one."""

    folder: Path
    graphs: list[str]
    replaced: bool


def export_model(run_folder: str | Path, format: str, output: str | Path, *, overwrite: bool = False) -> Exported:
    """Export the kept model of `run_folder` as `format` (onnx, savedmodel) into the folder `output` (module
    docstring). A `SpecError` in one line for bad input, a kind that cannot be exported, or an `output` that
    holds something and `overwrite` is not given."""
    if format not in FORMATS:
        raise SpecError(f"--format {format!r} is not an export format. Allowed: {', '.join(FORMATS)}.")
    if keras.backend.backend() != "tensorflow":
        raise SpecError(f"exporting a model needs the tensorflow backend (Keras's SavedModel export, and its ONNX "
                        f"export with a dynamic batch and length, run there); this process runs "
                        f"{keras.backend.backend()}")
    output = removal.destination(output)  # resolved once: what is checked is what is replaced
    run = Path(run_folder)
    _check_output(output, overwrite, reads=[run])
    kept = load_model(run)
    _check_exportable(kept)
    staging = removal.staging_beside(output)
    try:
        models = _graph_models(kept)
        graphs = _export_graphs(kept, format, staging, models)
        _copy_preprocessing(kept, staging)
        manifest = _manifest(kept, format, graphs, models.get("decoder_step"))
        tokenizer = tokenizer_files(kept, staging)
        if tokenizer is not None:
            manifest["tokenizer"] = tokenizer
        if format == "onnx":
            manifest["serve"] = write_script(staging)
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        if output.is_dir() and not output.is_symlink() and not any(output.iterdir()):
            output.rmdir()  # empty (checked): the export takes its place
        replaced = removal.swap_in(staging, output, reads=[run])
    finally:
        removal.remove_tree(staging, inside=output.parent)
    return Exported(output, list(graphs), replaced)


def _check_output(output: Path, overwrite: bool, reads: list[Path]) -> None:
    """Refuse an `output` that holds something unless `overwrite`, and, even then, one that must never be
    replaced (results.removal: the current folder or one above it, a results folder, the run it reads)."""
    if output.is_symlink() or (output.exists() and not output.is_dir()):
        if not overwrite:
            raise SpecError(f"--output {output} exists and is not a folder (--overwrite replaces it)")
    elif output.is_dir() and any(output.iterdir()):
        if not overwrite:
            raise SpecError(f"--output {output} already holds files (choose another folder, or --overwrite "
                            f"replaces it)")
    removal.check_replaceable(output, reads=reads)


def _check_exportable(kept: KeptModel) -> None:
    where = f"{kept.folder}: model kind {kept.kind!r}"
    if kept.model_kind.model_file.name != KERAS_FILE:
        raise NotExportable(f"{where} cannot be exported: its model is {kept.model_kind.model_file.holds} "
                            f"({kept.model_kind.model_file.name}), not a Keras graph")
    if kept.abilities.tags:
        raise NotExportable(f"{where} cannot be exported: its tags come from the CRF's Viterbi decoding, outside "
                            "the forward pass that Keras's export writes (use `seqkeras predict`)")


def _graph_models(kept: KeptModel) -> dict:
    """The Keras models exported, by graph name: the model itself, or an encoder-decoder's encoder and step, as the
    model gives them (`decoding.protocol.EncoderDecoder.export_graphs`)."""
    if kept.poses.source_to_target:
        return kept.model.export_graphs()
    return {"model": kept.model}


def _export_graphs(kept: KeptModel, format: str, folder: Path, models: dict) -> dict[str, dict]:
    """Each graph of `models` exported into `folder`: its file or folder name → its inputs and outputs (name →
    dtype, shape)."""
    if "model" in models:
        graphs = {"model": (kept.model, functional_signature(kept.model))}
        specs, length = _specs(graphs["model"][1]), "length"
    else:
        graphs = {name: (model, model.signature()) for name, model in models.items()}
        # What the encoder gives is what the step reads: one set of specs names the dimensions of both.
        specs, length = _specs(graphs["encoder"][1]) | _specs(graphs["decoder_step"][1]), "source_length"
    written = {}
    for name, (model, signature) in graphs.items():
        target = folder / (f"{name}.onnx" if format == "onnx" else name)
        try:
            with quiet_stderr():  # tf2onnx and TensorFlow's SavedModel writer log every step
                model.export(str(target), format=FORMATS[format], input_signature=signature, verbose=False)
        except ImportError as error:
            raise SpecError(f"exporting as {format} needs {error.name or 'a package'}, which is not installed: "
                            "pip install -r requirements-export.txt (or the `export` extra)") from None
        except Exception as error:  # Keras, TensorFlow and tf2onnx raise many types for a graph they cannot write
            first = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
            raise NotExportable(f"{kept.folder}: model kind {kept.kind!r} could not be exported as {format} "
                                f"({type(error).__name__}: {first})") from None
        if format == "onnx":
            named_dimensions(target, specs, length)
        written[target.name] = _interface(signature, written_outputs(target, format))
    return written


def named_dimensions(path: Path, specs: dict, length: str) -> None:
    """Name the dynamic dimensions of an ONNX graph's inputs and outputs, which tf2onnx calls unk__<n>: `batch` on
    axis 0, `length` (the token sequence's: length, or source_length in an encoder-decoder's graphs) on any other.
    A tensor named as a spec of `specs`, or next_<that name>, takes the spec's sizes where tf2onnx has none. An
    output tf2onnx named after a TensorFlow op (`Identity:0`, a plain model's one output) is `output_<i>`, as the
    SavedModel's signature names it."""
    import onnx

    graph = onnx.load(str(path))
    for index, output in enumerate(graph.graph.output):
        if ":" in output.name:
            old, output.name = output.name, f"output_{index}"
            for node in graph.graph.node:
                node.output[:] = [output.name if name == old else name for name in node.output]
                node.input[:] = [output.name if name == old else name for name in node.input]
    for value in [*graph.graph.input, *graph.graph.output]:
        spec = specs.get(value.name) or specs.get(value.name.removeprefix(NEXT))
        for axis, dimension in enumerate(value.type.tensor_type.shape.dim):
            if dimension.HasField("dim_value"):
                continue
            size = spec[axis] if spec is not None and axis < len(spec) else None
            if size is not None:
                dimension.dim_value = size
            else:
                dimension.dim_param = "batch" if axis == 0 else length
    onnx.save(graph, str(path))


def _specs(signature: list) -> dict[str, list]:
    """A signature's input shapes by name (None where dynamic)."""
    specs = signature[0] if isinstance(signature[0], dict) else {spec.name: spec for spec in signature}
    return {name: list(spec.shape) for name, spec in specs.items()}


def written_outputs(target: Path, format: str) -> list[str]:
    """The output names a written graph gives, read back from it (what a server sees)."""
    if format == "onnx":
        import onnx

        return [output.name for output in onnx.load(str(target), load_external_data=False).graph.output]
    import tensorflow as tf

    return sorted(tf.saved_model.load(str(target)).signatures["serving_default"].structured_outputs)


def functional_signature(model) -> list:
    """A model's inputs as Keras's export takes them, named and with their dynamic axes (None): batch, length.
    (Keras derives them only from a model called in this process; a loaded one has not been.)"""
    import tensorflow as tf

    specs = {tensor.name: tf.TensorSpec(tensor.shape, dtype=tensor.dtype, name=tensor.name) for tensor in model.inputs}
    return [specs] if len(specs) > 1 else list(specs.values())


def _interface(signature: list, outputs: list[str]) -> dict:
    """A graph's inputs (name → dtype and shape, None where dynamic) and outputs (names), for export.json."""
    specs = signature[0] if isinstance(signature[0], dict) else {spec.name: spec for spec in signature}
    inputs = {name: {"dtype": spec.dtype.name, "shape": list(spec.shape)} for name, spec in specs.items()}
    return {"inputs": inputs, "outputs": outputs}


def _copy_preprocessing(kept: KeptModel, folder: Path) -> None:
    """preprocessing.json, the vocabularies it names (one file when both sides share it) and a learnt subword
    model's file (input.tokenizer), as the run keeps them."""
    document = kept.preprocessing.document
    names = [FILE] + [name for name in (document.input.vocabulary, document.output.vocabulary) if name]
    for name in dict.fromkeys(names):
        (folder / name).write_text(files.read_text(kept.folder, name), encoding="utf-8")
    for name, content in kept.preprocessing.tokenizer_files().items():  # as read and checked when it loaded
        (folder / name).write_bytes(content)


def _manifest(kept: KeptModel, format: str, graphs: dict[str, dict], step=None) -> dict:
    """export.json; with `step` (an encoder-decoder's step graph), the loop: which of the encoder's outputs every
    step reads unchanged (memory), which it replaces (states: input name → the output that replaces it), and, for
    a step whose caches have a fixed length, the most steps it takes (max_steps)."""
    document = kept.preprocessing.document
    manifest = {"format": format, "model_kind": kept.kind, "problem": kept.problem, "run": str(kept.folder),
                "preprocessing": FILE, "graphs": graphs}
    if step is not None:
        encoder, step_graph = graphs
        manifest["loop"] = {"encoder": encoder, "step": step_graph, "start": document.output.start,
                            "end": document.output.end, "max_output_length": document.output.max_output_length,
                            "memory": [name for name in graphs[encoder]["outputs"] if name in step.memory_names],
                            "states": {name: f"{NEXT}{name}" for name in graphs[encoder]["outputs"]
                                       if name in step.state_names}}
        if step.positions is not None:  # the caches of a Transformer's step hold so many positions
            manifest["loop"]["max_steps"] = step.positions
    return manifest
