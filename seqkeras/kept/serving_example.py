"""What an ONNX export holds beside its graphs for a server outside the suite: the run's subword tokenizer in its
library's own format (`tokenizer_files`, named in export.json's `tokenizer`) and `serve.py` (`SCRIPT`), a short
example in plain Python (numpy, onnxruntime, json; tokenizers or sentencepiece at those levels) that reads the
export folder, turns a text into ids as preprocessing.json says, runs the graph or export.json's greedy loop and
prints the label or the output text, as `seqkeras predict` would (tests/test_export_model.py compares them).
"""

from __future__ import annotations

from pathlib import Path

from seqkeras.tasks import subwords
from seqkeras.tasks.input_rules import SUBWORD_SPLITS

SERVE_FILE = "serve.py"


def tokenizer_files(kept, folder: Path) -> dict | None:
    """Write the run's subword tokenizer in its library's format into `folder` (the level's own `export`: bpe
    writes tokenizer.json, the very tokenizer the run splits with; sentencepiece_* keep sentencepiece.model,
    already there); export.json's `tokenizer` entry, or None at a level without one. Its pieces by id are
    vocabulary.json's; the text is standardized first, as preprocessing.json says."""
    preprocessing = kept.preprocessing
    split = preprocessing.document.input.split
    if split not in SUBWORD_SPLITS:
        return None
    return subwords.exported(split, preprocessing.subword_level_model, folder)


SCRIPT = r'''"""Serve this exported model with ONNX Runtime, without seqkeras:

    python serve.py "a text"

Reads export.json, preprocessing.json and the vocabularies beside this file, turns the text into ids as
preprocessing.json says, runs model.onnx (a classifier: prints the label) or encoder.onnx and decoder_step.onnx
in the greedy loop export.json's `loop` describes (prints the output text). Needs numpy and onnxruntime, and
the `tokenizers` or `sentencepiece` package at those subword levels.
"""
import functools
import json
import re
import sys
from pathlib import Path

import numpy as np
import onnxruntime

HERE = Path(__file__).resolve().parent
WHITESPACE = re.compile(r"[ \t\n\v\f\r]+")
PUNCTUATION = re.compile(r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']')
ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
WORD_START = "\u2581"  # a piece that starts a word (bpe, sentencepiece levels)


def read(name):
    return json.loads((HERE / name).read_text(encoding="utf-8"))


@functools.cache
def session(name):
    return onnxruntime.InferenceSession(str(HERE / name), providers=["CPUExecutionProvider"])


def run(name, feeds):
    graph = session(name)
    names = [output.name for output in graph.get_outputs()]
    return dict(zip(names, graph.run(None, {item.name: feeds[item.name] for item in graph.get_inputs()})))


def ids_of(text, rule, tokenizer):
    """The text's ids: lowercased, punctuation stripped and split as preprocessing.json's `input` says."""
    if rule["lowercase"] == "ascii":
        text = text.translate(ASCII_LOWER)
    elif rule["lowercase"] == "unicode":
        text = text.lower()
    if rule["strip_punctuation"]:
        text = PUNCTUATION.sub("", text)
    split, index = rule["split"], {token: i for i, token in enumerate(read(rule["vocabulary"]))}
    library = tokenizer and tokenizer["library"]  # a subword level's: export.json names its library and file
    if library in ("tokenizers", "sentencepiece"):
        if rule["pattern"] is not None:  # the task's words first, then their pieces
            text = " ".join(re.findall(rule["pattern"], text))
        text, file = " ".join(text.split()), str(HERE / tokenizer["file"])
        if library == "tokenizers":
            import tokenizers
            ids = tokenizers.Tokenizer.from_file(file).encode(text).ids
        else:
            import sentencepiece
            ids = sentencepiece.SentencePieceProcessor(model_file=file).encode(text)
    elif tokenizer is None and split in ("whitespace", "characters", "pattern"):
        tokens = {"whitespace": lambda: [token for token in WHITESPACE.split(text) if token],
                  "characters": lambda: list(text), "pattern": lambda: re.findall(rule["pattern"], text)}[split]()
        ids = [index.get(token, index.get("<unk>", 0)) for token in tokens]
    else:
        sys.exit(f"serve.py does not split input.split {split!r} (export.json's tokenizer says how to read it)")
    return ids[: rule["max_length"]] if rule["max_length"] is not None else ids


def greedy(loop, source, target):
    """export.json's loop, greedy: the output tokens, the end token left out."""
    carried = run(loop["encoder"], {"source": source})
    token, end = np.array([target.index(loop["start"])], dtype="int32"), target.index(loop["end"])
    steps = loop["max_output_length"] or 2 * source.shape[1] + 2
    chosen = []
    for _ in range(min(steps, loop.get("max_steps") or steps)):
        outputs = run(loop["step"], {"token": token, **carried})
        carried.update({name: outputs[replaced_by] for name, replaced_by in loop["states"].items()})
        token = outputs["log_probabilities"].argmax(axis=-1).astype("int32")
        if int(token[0]) == end:
            break
        chosen.append(int(token[0]))
    return [target[i] for i in chosen if i != 0 and target[i] != loop["start"]]


def words_of(pieces):
    """Pieces marked WORD_START -> the words they spell (a piece without the mark continues the word before)."""
    words, continuing = [], False
    for piece in pieces:
        if piece.startswith(WORD_START) or not continuing:
            words.append(piece[len(WORD_START):] if piece.startswith(WORD_START) else piece)
            continuing = True
        else:
            words[-1] += piece
    return [word for word in words if word]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    EXPORT, PREPROCESSING = read("export.json"), read("preprocessing.json")
    output = PREPROCESSING["output"]
    ids = ids_of(sys.argv[1], PREPROCESSING["input"], EXPORT.get("tokenizer"))
    if not ids:
        sys.exit("the text has no tokens once standardized as the run did: give a text with words in it")
    if PREPROCESSING["problem"] == "classification":
        (graph, interface), = EXPORT["graphs"].items()
        (name, spec), = interface["inputs"].items()
        (probabilities,) = run(graph, {name: np.array([ids], dtype=spec["dtype"])}).values()
        print(output["labels"][int(probabilities[0].argmax())])
    elif PREPROCESSING["problem"] == "seq2seq":
        pieces = greedy(EXPORT["loop"], np.array([ids], dtype="int32"), read(output["vocabulary"]))
        print(output["join"].join(words_of(pieces) if output["continuation"] == WORD_START else pieces))
    else:
        sys.exit(f"serve.py serves classifiers and encoder-decoders, not a {PREPROCESSING['problem']} model")
'''


def write_script(folder: Path) -> str:
    """serve.py into `folder`; its name."""
    (folder / SERVE_FILE).write_text(SCRIPT, encoding="utf-8")
    return SERVE_FILE
