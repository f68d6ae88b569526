"""No bad spec or data file crashes, hangs, or is silently misread: each class of mistake, several ways.

Every case goes through the command line (`seqkeras validate`) and must end
quickly with exit status 2 and a short `error: ...` naming the file and key,
never a traceback. The command runs in a thread with a deadline, so a case
that would block (a FIFO opened for reading) or expand without end fails
the test instead of hanging the suite.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from seqkeras.errors import SpecError
from seqkeras.spec.loader import load_yaml
from tests.helpers import run_cli_within

DEADLINE_S = 30  # each case takes well under a second; a hang is what this catches
BASE = """\
version: 1
name: hostile
task: {name: delayed_recall, lag: 3, n_train: 64, n_test: 32}
model: {kind: classifier, cell: gru, units: 4, embedding_dim: 4}
train: {epochs: 1, batch_size: 16, verbose: 0}
"""


def cli(capsys, *args):
    """`seqkeras ARGS...` in this process, within DEADLINE_S."""
    return run_cli_within(DEADLINE_S, capsys, *args)


def refused(capsys, *args, names: tuple[str, ...] = (), limit: int = 2000) -> str:
    """The error of a command that must be refused: exit 2, no traceback, short, naming each of `names`."""
    code, out, err = cli(capsys, *args)
    assert code == 2, (code, out[-500:], err[-500:])
    assert "Traceback" not in out + err
    assert err.startswith("error: ") and len(err) < limit, err[:3000]
    for name in names:
        assert name in err, (name, err)
    return err


def validates(capsys, path) -> None:
    code, out, err = cli(capsys, "validate", path)
    assert code == 0 and out.startswith("ok"), err


def write(tmp_path: Path, content: str | bytes, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- #
# 1. YAML that is not data
# --------------------------------------------------------------------------- #

DUPLICATES = {
    "top-level key": (BASE + "name: again\n", "'name'", "line 6", "first on line 2"),
    "flow mapping": (BASE.replace("units: 4,", "units: 4, units: 8,"), "'units'", "line 4", "first on line 4"),
    "block mapping": (BASE + "evaluate:\n  metrics: [accuracy]\n  metrics: [loss]\n", "'metrics'", "line 8", ""),
    "matrix axis": (BASE + "matrix:\n  model.cell: [gru]\n  model.cell: [lstm]\n", "'model.cell'", "line 8", ""),
    "quoted and plain": (BASE + '"seeds": [0]\nseeds: [1]\n', "'seeds'", "line 7", "first on line 6"),
    "int keys 1 and 0x1": (BASE + "expect: []\nplots: []\nx: {1: a, 0x1: b}\n", "appears twice", "line 8", ""),
}


@pytest.mark.parametrize("case", DUPLICATES, ids=list(DUPLICATES))
def test_a_key_written_twice_is_refused_with_its_line(tmp_path, capsys, case):
    text, key, line, first = DUPLICATES[case]
    path = write(tmp_path, text)
    refused(capsys, "validate", path, names=(str(path), key, line, first, "appears twice"))


def test_a_key_overriding_a_merged_one_is_not_a_duplicate(tmp_path, capsys):
    text = BASE.replace("train: {epochs: 1, batch_size: 16, verbose: 0}",
                        "train:\n  <<: {epochs: 3, batch_size: 16, verbose: 0}\n  epochs: 1")
    validates(capsys, write(tmp_path, text))


ENCODINGS = {
    "latin-1 é": ((BASE + "description: café\n").encode("latin-1"), "byte 0xe9 is not UTF-8", "line 6"),
    "UTF-16 with BOM": (BASE.encode("utf-16"), "UTF-16", "byte-order mark"),
    "UTF-16-BE with BOM": (b"\xfe\xff" + BASE.encode("utf-16-be"), "UTF-16", "save it as UTF-8"),
    "UTF-32 with BOM": (BASE.encode("utf-32"), "UTF-32", "save it as UTF-8"),
    "UTF-16 without BOM": (BASE.encode("utf-16-le"), "NUL", "UTF-16"),
    "stray byte in a comment": (BASE.encode() + b"# \xff\xfe\n", "byte 0xff", "line 6"),
    "truncated UTF-8": (BASE.encode() + "description: é".encode()[:-1] + b"\n", "not UTF-8", "line 6"),
}


@pytest.mark.parametrize("case", ENCODINGS, ids=list(ENCODINGS))
def test_a_file_that_is_not_utf8_is_refused(tmp_path, capsys, case):
    content, *fragments = ENCODINGS[case]
    path = write(tmp_path, content)
    refused(capsys, "validate", path, names=(str(path), *fragments))


def test_a_utf8_byte_order_mark_is_fine(tmp_path, capsys):
    validates(capsys, write(tmp_path, b"\xef\xbb\xbf" + BASE.encode()))


def _stacked_aliases(levels: int, depth: int) -> str:
    """Anchors each nesting the previous `depth` levels deeper: shallow as written, deep once expanded."""
    lines = [f"a0: &a0 {'[' * depth}1{']' * depth}"]
    lines += [f"a{i}: &a{i} {'[' * depth}*a{i - 1}{']' * depth}" for i in range(1, levels)]
    return BASE + "\n".join(lines) + "\n"


DEEP = {
    "10,000 [": BASE + "x: " + "[" * 10_000 + "]" * 10_000 + "\n",
    "10,000 {a:": BASE + "x: " + "{a: " * 10_000 + "1" + "}" * 10_000 + "\n",
    "150 indented mappings": BASE + "".join(f"{'  ' * i}k{i}:\n" for i in range(150)) + "  " * 150 + "end\n",
    "200 block sequences": BASE + "x:\n" + "".join(f"{'  ' * i}-\n" for i in range(1, 200)) + "  " * 200 + "- 1\n",
    "aliases stacked 5 x 40": _stacked_aliases(5, 40),
}


@pytest.mark.parametrize("case", DEEP, ids=list(DEEP))
def test_deep_nesting_is_refused(tmp_path, capsys, case):
    path = write(tmp_path, DEEP[case])
    refused(capsys, "validate", path, names=(str(path), "nested deeper than 100 levels"))


def test_deep_nesting_in_a_set_value_is_refused(tmp_path, capsys):
    path = write(tmp_path, BASE)
    refused(capsys, "validate", path, "--set", "model.units=" + "[" * 10_000,
            names=("--set model.units", "nested deeper than 100 levels"))


def _laughs(levels: int, width: int = 9) -> str:
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels)]
    return BASE + "\n".join(lines) + "\n"


def _merge_chain(links: int) -> str:
    lines = ["m0: &m0 {x0: 0}"] + [f"m{i}: &m{i} {{<<: *m{i - 1}, x{i}: {i}}}" for i in range(1, links)]
    return BASE + "\n".join(lines) + "\n"


ALIASES = {
    "billion laughs (9 levels of 9)": (_laughs(9), "more than 200,000 values once aliases"),
    "one wide alias used 1,000 times": (
        BASE + "a: &a [" + ", ".join(["x"] * 1000) + "]\nb: [" + ", ".join(["*a"] * 1000) + "]\n",
        "more than 200,000 values once aliases",
    ),
    "a chain of 600 merges": (_merge_chain(600), "once aliases (*name) are expanded"),
    "a list containing itself": (BASE + "a: &a [1, *a]\n", "contains itself"),
    "a mapping containing itself": (BASE + "a: &a {b: *a}\n", "contains itself"),
    "laughs in a --set value": (None, "more than 200,000 values once aliases"),
}


@pytest.mark.parametrize("case", ALIASES, ids=list(ALIASES))
def test_alias_expansion_is_bounded_before_expanding(tmp_path, capsys, case):
    text, message = ALIASES[case]
    if text is None:
        path = write(tmp_path, BASE)
        value = "{" + _laughs(9)[len(BASE):].strip().replace("\n", ", ") + "}"  # the same, as a flow mapping
        refused(capsys, "validate", path, "--set", f"model.units={value}", names=("--set model.units", message))
    else:
        path = write(tmp_path, text)
        refused(capsys, "validate", path, names=(str(path), message))


def test_a_few_aliases_are_fine(tmp_path, capsys):
    text = BASE.replace("train: {", "shared: &t {name: adam, learning_rate: 0.01}\ntrain: {optimizer: *t, ")
    code, _, err = cli(capsys, "validate", write(tmp_path, text))
    assert code == 2 and "unknown key 'shared'" in err  # the anchor parsed; the spec refuses the extra key
    text = BASE + "matrix: {model.cell: &cells [gru, lstm]}\n"
    validates(capsys, write(tmp_path, text, "ok.yaml"))


UNREADABLE_SCALARS = {
    "an int of 5,000 digits": (BASE.replace("units: 4", "units: " + "9" * 5000), "cannot read", "5,000 characters"),
    "a date in month 13": (BASE + "description: 2024-13-45\n", "cannot read '2024-13-45'", "month must be in 1..12"),
    "a python tag": (BASE + "description: !!python/object:os.system [ls]\n", "malformed YAML", "line 6"),
    "bad base64": (BASE + "description: !!binary '@@@'\n", "description", "expected text, got b''"),
    "two documents": (BASE + "---\n" + BASE, "malformed YAML", "single document"),
}


@pytest.mark.parametrize("case", UNREADABLE_SCALARS, ids=list(UNREADABLE_SCALARS))
def test_values_yaml_cannot_build_are_refused(tmp_path, capsys, case):
    text, *fragments = UNREADABLE_SCALARS[case]
    path = write(tmp_path, text)
    refused(capsys, "validate", path, names=(str(path), *fragments))


def _sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as file:  # a hole: no disk space, but stat says `size`
        file.truncate(size)
    return path


def test_a_spec_over_1_mib_is_refused_unread(tmp_path, capsys):
    path = write(tmp_path, BASE + "#" * (2 << 20) + "\n")
    refused(capsys, "validate", path, names=(str(path), "1 MiB"))
    path = _sparse(tmp_path / "huge.yaml", 5 << 30)
    refused(capsys, "validate", path, names=(str(path), "5 GiB", "the limit is 1 MiB"))


def _not_a_file(folder: Path, case: str) -> tuple[Path, str]:
    """An entry named *.yaml in `folder` that is not a regular file, and what the error calls it."""
    path = folder / f"{case.split()[0].lower()}.yaml"
    if case == "FIFO":
        os.mkfifo(path)
        return path, "is a FIFO (named pipe)"
    if case == "folder named x.yaml":
        path.mkdir()
        return path, "is a folder"
    if case == "symlink to /dev/zero":
        path.symlink_to("/dev/zero")
        return path, "is a device"
    path.symlink_to(folder / "nowhere")
    return path, "does not exist"


@pytest.mark.parametrize("case", ["FIFO", "folder named x.yaml", "symlink to /dev/zero", "dangling symlink"])
def test_a_spec_folder_entry_that_is_not_a_file_is_named_not_opened(tmp_path, capsys, case):
    write(tmp_path, BASE, "good.yaml")
    path, message = _not_a_file(tmp_path, case)
    refused(capsys, "validate", tmp_path, names=(str(path), message))


@pytest.mark.parametrize(
    ("target", "message"),
    [("/dev/zero", "is a device"), ("/dev/null", "is a device"), ("nowhere.yaml", "no such file or folder")],
)
def test_a_named_spec_that_is_not_a_file_says_what_it_is(tmp_path, capsys, target, message):
    refused(capsys, "validate", target, names=(target, message))


def test_a_named_fifo_is_refused_not_opened(tmp_path, capsys):
    fifo = tmp_path / "x.yaml"
    os.mkfifo(fifo)
    refused(capsys, "validate", fifo, names=(str(fifo), "is a FIFO (named pipe), not a regular file"))


def test_load_yaml_refuses_a_folder(tmp_path):
    with pytest.raises(SpecError, match="is a folder, not a file"):
        load_yaml(tmp_path)


HUGE = "x" * 200_000  # in a file (the YAML scanner is pure Python); --set values are bigger


BOUNDED = {
    "a huge cell name": ("model.cell", BASE.replace("cell: gru", f"cell: {HUGE}")),
    "a huge unknown key": ("evaluate.", BASE + f"evaluate:\n  ? {HUGE}\n  : 4\n"),  # `? ` writes a long key
    "a huge matrix key": ("model.", BASE + f"matrix:\n  ? model.{HUGE}\n  : [1]\n"),
    "a huge task name": ("task.name", BASE.replace("name: delayed_recall", f"name: {HUGE}")),
    "a huge experiment name": ("name", BASE.replace("name: hostile", f"name: {HUGE}")),
    "a huge text for a number": ("model.units", BASE.replace("units: 4", f"units: '{HUGE}'")),
    "a huge matrix value": ("matrix.model.cell", BASE + f"matrix: {{model.cell: [{HUGE}]}}\n"),
    "a huge list for a number": ("model.units", BASE.replace("units: 4", "units: [" + "1, " * 50_000 + "1]")),
    "a huge section": ("task", BASE.replace("task: {name: delayed_recall, lag: 3, n_train: 64, n_test: 32}",
                                            f"task: '{HUGE}'")),
}


@pytest.mark.parametrize("case", BOUNDED, ids=list(BOUNDED))
def test_echoed_values_are_bounded(tmp_path, capsys, case):
    key, text = BOUNDED[case]
    path = write(tmp_path, text)
    err = refused(capsys, "validate", path, names=(str(path), key), limit=1000)
    assert "characters)" in err or "…" in err


@pytest.mark.parametrize(
    "override",
    ["x" * 5_000_000, "model.cell=" + "y" * 5_000_000, "model.units=" + "z" * 5_000_000, "z" * 5_000 + "=1"],
    ids=["no =", "huge cell", "huge text for a number", "huge key"],
)
def test_echoed_set_values_are_bounded(tmp_path, capsys, override):
    refused(capsys, "validate", write(tmp_path, BASE), "--set", override, names=("--set",), limit=1000)


# --------------------------------------------------------------------------- #
# 2. A bool (or text) where a number is expected, and the reverse
# --------------------------------------------------------------------------- #

WRONG_SCALARS = [
    ("model.units=true", "model.units", "expected a whole number (integer), got true"),
    ("model.units=false", "model.units", "got false"),
    ('model.units="5"', "model.units", "got the text '5'"),
    ("model.units=4.5", "model.units", "got 4.5"),
    ("task.n_train=yes", "task.n_train", "got true"),
    ("train.epochs=true", "train.epochs", "expected a whole number"),
    ("train.optimizer.learning_rate=true", "train.optimizer.learning_rate", "expected a number, got true"),
    ('train.optimizer.learning_rate="0.1"', "train.optimizer.learning_rate", "got the text '0.1'"),
    ("train.optimizer.learning_rate=.nan", "train.optimizer.learning_rate", "expected a finite number"),
    ("train.optimizer.clipnorm=.inf", "train.optimizer.clipnorm", "expected a finite number"),
    ("train.verbose=true", "train.verbose", "expected one of 0, 1, 2, got true"),
    ("version=true", "version", "expected one of 1, got true"),
    ("seeds=[0, true]", "seeds[1]", "got true"),
    ("model.bidirectional=1", "model.bidirectional", "expected true or false, got 1"),
    ('model.bidirectional="true"', "model.bidirectional", "got the text 'true'"),
    ("task.lag=[3]", "task.lag", "got a list [3]"),
]


@pytest.mark.parametrize(("override", "key", "message"), WRONG_SCALARS, ids=[o for o, _, _ in WRONG_SCALARS])
def test_a_bool_or_text_is_not_a_number(tmp_path, capsys, override, key, message):
    refused(capsys, "validate", write(tmp_path, BASE), "--set", override, names=(key, message))


def test_a_bool_in_the_file_is_not_a_number(tmp_path, capsys):
    path = write(tmp_path, BASE.replace("units: 4", "units: true"))
    refused(capsys, "validate", path, names=(str(path), "model.units", "expected a whole number (integer), got true"))


@pytest.mark.parametrize("value", ["1", "1e-3", "2.5e-4", "1.0e-3", "0.001", "5E-3"])
def test_numbers_in_every_spelling_are_still_numbers(tmp_path, capsys, value):
    text = BASE.replace("verbose: 0}", f"verbose: 0, optimizer: {{name: adam, learning_rate: {value}}}}}")
    validates(capsys, write(tmp_path, text))


# --------------------------------------------------------------------------- #
# 3. Data files, checked when the spec is validated
# --------------------------------------------------------------------------- #


def _data(tmp_path: Path) -> dict[str, Path]:
    files = {
        "good.conll": "Ada B-PER\nsaw O\n\nRome B-LOC\n",
        "untagged.conll": "Ada B-PER\nsaw O\nRome\n",
        "empty.conll": "\n\n",
        "good.csv": "text,label\nfine,pos\nbad,neg\n",
        "review.csv": "review,label\nfine,pos\nbad,neg\n",
        "class.tsv": "sentence\tclass\nfine\tpos\n",
    }
    paths = {name: write(tmp_path, text, name) for name, text in files.items()}
    paths["latin.conll"] = write(tmp_path, "café O\n".encode("latin-1"), "latin.conll")
    paths["utf16.conll"] = write(tmp_path, "Ada B-PER\n".encode("utf-16"), "utf16.conll")
    paths["utf16le.conll"] = write(tmp_path, "Ada B-PER\n".encode("utf-16-le"), "utf16le.conll")
    paths["oneline.conll"] = write(tmp_path, b"x" * (2 << 20), "oneline.conll")
    paths["huge.conll"] = _sparse(tmp_path / "huge.conll", 3 << 30)
    paths["fifo"] = tmp_path / "data.fifo"
    os.mkfifo(paths["fifo"])
    paths["folder"] = tmp_path / "data"
    paths["folder"].mkdir()
    paths["missing"] = tmp_path / "missing.txt"
    return paths


CONLL = "{name: conll_file, path: '{path}'}"
DATA_CASES = [
    # (task as a template, the file, the key path, what the message says)
    (CONLL, "missing", "task.path", "no such file"),
    (CONLL, "folder", "task.path", "is a folder"),
    (CONLL, "fifo", "task.path", "is a FIFO (named pipe)"),
    (CONLL, "/dev/zero", "task.path", "is a device"),
    (CONLL, "huge.conll", "task.path", "the limit is 2 GiB"),
    (CONLL, "untagged.conll", "task.path", "line 3: expected a token and its tag"),
    (CONLL, "empty.conll", "task.path", "holds no tagged tokens"),
    (CONLL, "latin.conll", "task.path", "line 1: byte 0xe9 is not UTF-8"),
    (CONLL, "utf16.conll", "task.path", "UTF-16"),
    (CONLL, "utf16le.conll", "task.path", "NUL byte"),
    (CONLL, "oneline.conll", "task.path", "line 1: longer than 1 MiB"),
    ("{name: conll_file, path: '{good.conll}', test_path: '{path}'}", "fifo", "task.test_path", "FIFO"),
    ("{name: conll_file, path: '{good.conll}', test_path: '{path}'}", "untagged.conll", "task.test_path", "line 3"),
    ("{name: text_classification_file, path: '{path}'}", "review.csv", "task.text_column",
     "no column 'text'; the header (line 1) has 'review', 'label'"),
    ("{name: text_classification_file, path: '{path}', text_column: sentence}", "class.tsv", "task.label_column",
     "no column 'label'; the header (line 1) has 'sentence', 'class'"),
    ("{name: text_classification_file, path: '{good.csv}', test_path: '{path}'}", "review.csv", "task.text_column",
     "no column 'text'"),
    ("{name: text_classification_file, path: '{path}'}", "/dev/zero", "task.path", "is a device"),
    ("{name: text_classification_file, path: '{path}'}", "empty.conll", "task.path", "is empty"),
    ("{name: char_lm, path: '{path}'}", "fifo", "task.path", "is a FIFO"),
    ("{name: char_lm, path: '{path}'}", "/dev/zero", "task.path", "is a device"),
    ("{name: char_lm, path: '{path}'}", "folder", "task.path", "is a folder"),
    ("{name: lm_corpus, corpus: path, path: '{path}'}", "missing", "task.path", "no such file"),
    ("{name: lm_corpus, corpus: path, path: '{path}'}", "fifo", "task.path", "is a FIFO"),
    ("{name: lm_corpus, corpus: path, path: '{path}'}", "huge.conll", "task.path", "the limit is 2 GiB"),
    ("{name: de_en, path: '{path}'}", "fifo", "task.path", "is a FIFO"),
    ("{name: de_en, path: '{path}'}", "folder", "task.path", "is a folder"),
]
MODEL_OF_TASK = {"conll_file": "tagger", "text_classification_file": "classifier", "char_lm": "lm",
                 "lm_corpus": "lm", "de_en": "seq2seq"}


@pytest.mark.parametrize(("task", "file", "key", "message"), DATA_CASES,
                         ids=[f"{t.split(',')[0][7:]}-{f}-{k}" for t, f, k, _ in DATA_CASES])
def test_a_bad_data_file_is_refused_when_the_spec_is_validated(tmp_path, capsys, task, file, key, message):
    paths = _data(tmp_path)
    target = str(paths.get(file, file))
    task_yaml = task.replace("{path}", target)
    for name, path in paths.items():
        task_yaml = task_yaml.replace("{" + name + "}", str(path))
    name = task_yaml.split(",")[0].split(":")[1].strip()
    spec = f"version: 1\nname: data\ntask: {task_yaml}\nmodel: {{kind: {MODEL_OF_TASK[name]}}}\n"
    path = write(tmp_path, spec)
    refused(capsys, "validate", path, names=(str(path), key, message, target if "line" not in message else ""))


def test_good_data_files_validate(tmp_path, capsys):
    paths = _data(tmp_path)
    for task, model in [(f"{{name: conll_file, path: '{paths['good.conll']}'}}", "tagger"),
                        (f"{{name: text_classification_file, path: '{paths['good.csv']}'}}", "classifier")]:
        validates(capsys, write(tmp_path, f"version: 1\nname: data\ntask: {task}\nmodel: {{kind: {model}}}\n"))


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_data_file_is_refused(tmp_path, capsys):
    data = write(tmp_path, "Ada B-PER\n", "locked.conll")
    data.chmod(0)
    path = write(tmp_path, f"version: 1\nname: data\ntask: {{name: conll_file, path: '{data}'}}\n"
                           f"model: {{kind: tagger}}\n")
    refused(capsys, "validate", path, names=("task.path", "cannot be read"))
